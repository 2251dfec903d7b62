"""`kpipe serve`: kpipe's SavedModels over HTTP, speaking TensorFlow Serving's REST API.

    repository.py  which exports are served under which names, loaded, and newer versions picked up
    signatures.py  a loaded signature's inputs and outputs, and whether requests to it can share a batch
    rest.py        TF Serving's JSON request and response formats, checked against a signature
    batching.py    concurrent requests to one signature gathered for a few milliseconds into one call
    app.py         the ASGI application (Starlette) and its start-up (uvicorn)
    listen.py      the socket, bound before any model loads
"""
