"""HTTP around the emulator's core: routes built from the operation table, error bodies, middleware,
the control API, HTML pages, the FastAPI app and the threaded uvicorn server."""
