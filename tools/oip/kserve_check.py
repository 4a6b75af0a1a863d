#!/usr/bin/env python3
"""Talks to a running Glimpse server with KServe's `InferenceRESTClient` (protocol v2), a client Glimpse did not write.

    kserve_check.py BASE_URL MODEL IMAGE [http1|h2c]

BASE_URL is http://host:port, MODEL a model or family name, IMAGE a JPEG/PNG file. The last argument picks
the transport: HTTP/1.1 (default), or HTTP/2 with prior knowledge (h2c). Prints one JSON object with what
each call returned and the HTTP versions httpx saw; exits non-zero when a call fails.

KServe's client is asynchronous and has no call for model metadata (kserve 0.21.0 has is_server_live,
is_server_ready, is_model_ready, infer, explain), so metadata is read with httpx over the same transport.
`RESTConfig(http2=True)` alone still speaks HTTP/1.1 to an http:// URL: httpx negotiates HTTP/2 only by
ALPN over TLS. h2c needs a transport built with `http1=False, http2=True` (and the `h2` package), which
RESTConfig accepts as `transport=`.
"""
import asyncio
import base64
import json
import sys

import httpx
import numpy as np
from kserve import InferenceRESTClient, InferInput, InferRequest, RESTConfig
from kserve.protocol.infer_type import RequestedOutput


class RecordingTransport(httpx.AsyncHTTPTransport):
    """httpx's transport, noting the HTTP version of every response."""

    def __init__(self, versions, **kwargs):
        super().__init__(**kwargs)
        self.versions = versions

    async def handle_async_request(self, request):
        response = await super().handle_async_request(request)
        self.versions.add(response.extensions.get("http_version", b"?").decode("ascii"))
        return response


def transport(kind, versions):
    if kind == "h2c":
        return RecordingTransport(versions, http1=False, http2=True)
    return RecordingTransport(versions)


def classes(output):
    """The classification extension's elements as (score, index, label)."""
    out = []
    for element in output.as_numpy().reshape(-1):
        text = element.decode("utf-8") if isinstance(element, bytes) else str(element)
        score, index, label = text.split(":", 2)
        out.append({"score": float(score), "index": int(index), "label": label})
    return out


async def check(base, model, image, kind):
    versions = set()
    config = RESTConfig(protocol="v2", transport=transport(kind, versions), timeout=60)
    report = {}
    async with InferenceRESTClient(config=config) as client:
        report["live"] = await client.is_server_live(base)
        report["ready"] = await client.is_server_ready(base)
        report["model_ready"] = await client.is_model_ready(base, model)
        report["unknown_model_ready"] = await client.is_model_ready(base, "no-such-model")
        async with httpx.AsyncClient(transport=transport(kind, versions), timeout=60) as plain:
            reply = await plain.get(f"{base}/v2/models/{model}")
            reply.raise_for_status()
            metadata = reply.json()
        report["metadata"] = metadata
        output = metadata["outputs"][0]["name"]
        image_input = next(i for i in metadata["inputs"] if i["datatype"] == "BYTES")["name"]
        encoded = base64.b64encode(image).decode("ascii")

        # JSON with the image as a base64 BYTES element, and the classification extension's top 5.
        request = InferRequest(model_name=model, request_id="kserve-1",
                               infer_inputs=[InferInput(image_input, [1], "BYTES", data=[encoded])],
                               parameters={"content_type": "base64"},
                               request_outputs=[RequestedOutput(output, parameters={"classification": 5})])
        result = await client.infer(base, request, model_name=model)
        report["classified"] = {"model_name": result.model_name, "id": result.id,
                                "classes": classes(result.outputs[0])}

        # The same JSON without the extension: the whole score tensor, its argmax the top-1.
        request = InferRequest(model_name=model, request_id="kserve-2",
                               infer_inputs=[InferInput(image_input, [1], "BYTES", data=[encoded],
                                                        parameters={"content_type": "base64"})])
        result = await client.infer(base, request, model_name=model)
        scores = result.outputs[0].as_numpy()
        report["scores"] = {"model_name": result.model_name, "shape": list(scores.shape),
                            "datatype": result.outputs[0].datatype, "argmax": int(np.argmax(scores.reshape(-1)))}

        # KServe's client can also send the image with the binary data extension.
        binary = InferInput(image_input, [1], "BYTES")
        binary.set_data_from_numpy(np.array([image], dtype=np.object_), binary_data=True)
        request = InferRequest(model_name=model, infer_inputs=[binary],
                               request_outputs=[RequestedOutput(output, parameters={"classification": 1})])
        result = await client.infer(base, request, model_name=model)
        report["binary"] = {"model_name": result.model_name, "classes": classes(result.outputs[0])}

        try:
            await client.infer(base, request, model_name="no-such-model")
            report["unknown_model"] = "served"
        except httpx.HTTPStatusError as e:
            report["unknown_model"] = {"status": e.response.status_code}
    report["http_versions"] = sorted(versions)
    return report


def main():
    base, model, image_path = sys.argv[1:4]
    kind = sys.argv[4] if len(sys.argv) > 4 else "http1"
    image = open(image_path, "rb").read()
    print(json.dumps(asyncio.run(check(base, model, image, kind))))


if __name__ == "__main__":
    main()
