#!/usr/bin/env python3
"""Talks to a running Glimpse server with NVIDIA's `tritonclient.http`, a client Glimpse did not write.

    tritonclient_check.py URL MODEL IMAGE [TENSOR]

URL is host:port, MODEL a model or family name, IMAGE a JPEG/PNG file, TENSOR (optional) a raw
little-endian float32 file holding the model's preprocessed input for IMAGE. Prints one JSON object
with what each call returned; exits non-zero when a call fails or a reply breaks the protocol.
"""
import base64
import json
import sys

import numpy as np
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException


def classes(result, name):
    """The classification extension's elements as (score, index, label)."""
    out = []
    for element in result.as_numpy(name).reshape(-1):
        text = element.decode("utf-8") if isinstance(element, bytes) else str(element)
        score, index, label = text.split(":", 2)
        out.append({"score": float(score), "index": int(index), "label": label})
    return out


def main():
    url, model, image_path = sys.argv[1:4]
    tensor_path = sys.argv[4] if len(sys.argv) > 4 else None
    image = open(image_path, "rb").read()
    client = httpclient.InferenceServerClient(url=url)
    report = {
        "live": client.is_server_live(),
        "ready": client.is_server_ready(),
        "model_ready": client.is_model_ready(model),
        "server": client.get_server_metadata(),
    }
    metadata = client.get_model_metadata(model)
    report["metadata"] = metadata
    output = metadata["outputs"][0]["name"]
    tensor_input = next(i for i in metadata["inputs"] if i["datatype"] == "FP32")

    # An encoded image as BYTES with the binary data extension (tritonclient's default), top 5 classes.
    image_input = httpclient.InferInput("image", [1], "BYTES")
    image_input.set_data_from_numpy(np.array([image], dtype=np.object_), binary_data=True)
    wanted = httpclient.InferRequestedOutput(output, binary_data=True, class_count=5)
    result = client.infer(model, [image_input], outputs=[wanted], request_id="binary-1")
    response = result.get_response()
    report["binary"] = {"model_name": response["model_name"], "model_version": response["model_version"],
                        "id": response.get("id"), "classes": classes(result, output)}

    # The same image in JSON: a base64 string, marked as MLServer does.
    json_input = httpclient.InferInput("image", [1], "BYTES")
    json_input.set_data_from_numpy(np.array([base64.b64encode(image).decode("ascii")], dtype=np.object_), binary_data=False)
    wanted = httpclient.InferRequestedOutput(output, binary_data=False, class_count=5)
    result = client.infer(model, [json_input], outputs=[wanted], parameters={"content_type": "base64"})
    report["json"] = {"model_name": result.get_response()["model_name"], "classes": classes(result, output)}

    # The whole output tensor, binary.
    result = client.infer(model, [image_input], outputs=[httpclient.InferRequestedOutput(output, binary_data=True)])
    scores = result.as_numpy(output)
    report["scores"] = {"shape": list(scores.shape), "dtype": str(scores.dtype), "argmax": int(np.argmax(scores.reshape(-1)))}

    # JSON BYTES without content_type: refused with a clear 400, not served.
    try:
        plain = httpclient.InferInput("image", [1], "BYTES")
        plain.set_data_from_numpy(np.array(["not base64 marked"], dtype=np.object_), binary_data=False)
        client.infer(model, [plain])
        report["unmarked_json"] = "served"
    except InferenceServerException as e:
        report["unmarked_json"] = {"status": e.status(), "message": e.message()}

    if tensor_path:
        values = np.fromfile(tensor_path, dtype="<f4")
        shape = [1] + [d for d in tensor_input["shape"][1:]]
        fp32 = httpclient.InferInput(tensor_input["name"], shape, "FP32")
        fp32.set_data_from_numpy(values.reshape(shape), binary_data=True)
        wanted = httpclient.InferRequestedOutput(output, binary_data=True, class_count=5)
        result = client.infer(model, [fp32], outputs=[wanted])
        report["tensor"] = {"classes": classes(result, output)}
        fp32_json = httpclient.InferInput(tensor_input["name"], shape, "FP32")
        fp32_json.set_data_from_numpy(values.reshape(shape), binary_data=False)
        result = client.infer(model, [fp32_json], outputs=[httpclient.InferRequestedOutput(output, binary_data=False, class_count=1)])
        report["tensor_json"] = {"classes": classes(result, output)}

    try:
        client.get_model_metadata("no-such-model")
        report["unknown_model"] = "found"
    except InferenceServerException as e:
        report["unknown_model"] = {"status": e.status(), "message": e.message()}

    print(json.dumps(report))


if __name__ == "__main__":
    main()
