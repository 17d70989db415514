"""HTTP around the emulator's core: the one /v1 route (the core's handlers answer), its middleware,
the control API, HTML pages, the FastAPI app and the threaded uvicorn server."""
