"""The emulated service without HTTP: world, state per resource behind one Backend, simulation, faults.

Nothing here imports FastAPI, Starlette, uvicorn or the shell (tests/test_layers.py).
"""
