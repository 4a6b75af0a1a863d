/// The OpenRPC description of the API, returned by `rpc.discover` and written to `openapi/openrpc.json`.
public enum OpenRPCDocument {
    static func param(_ name: String, _ schema: JSONValue, required: Bool = false, _ description: String) -> JSONValue {
        ["name": .string(name), "required": .bool(required), "description": .string(description), "schema": schema]
    }

    static let prediction: JSONValue = ["type": "object", "properties": [
        "label": ["type": "string"], "index": ["type": "integer"], "score": ["type": "number"]]]

    static let classifyResult: JSONValue = ["type": "object", "properties": [
        "model": ["type": "string"], "variant": ["type": "string"], "version": ["type": "string"],
        "reason": ["type": "string", "enum": ["requested", "most_accurate", "overflow", "min_accuracy", "meets_deadline", "deadline", "fastest", "ab_split"]],
        "predictions": ["type": "array", "items": prediction],
        "timing_ms": ["type": "object", "properties": ["queue": ["type": "number"], "decode": ["type": "number"],
                                                      "inference": ["type": "number"], "total": ["type": "number"]]],
        "batch_size": ["type": "integer"],
        "energy_mj": ["type": "number"],
        "image": ["type": "object", "properties": ["format": ["type": "string"], "width": ["type": "integer"], "height": ["type": "integer"]]],
    ], "required": ["model", "variant", "version", "reason", "predictions", "timing_ms", "batch_size", "energy_mj", "image"]]

    static func error(_ code: Int, _ message: String) -> JSONValue { ["code": .int(code), "message": .string(message)] }

    public static let document: JSONValue = [
        "openrpc": "1.2.6",
        "info": ["title": "Glimpse", "version": "0.1.0",
                 "description": "Image classification over JSON-RPC 2.0 (POST /rpc over HTTP/2 or HTTP/1.1, clear text or TLS). With API keys configured, every call needs `Authorization: Bearer <key>` (HTTP 401 with -32003 otherwise), and admin methods need an admin key. Without API keys, admin methods are refused with -32003 unless the server runs with --admin-without-auth."],
        "methods": [
            [
                "name": "classify",
                "summary": "Classify one image (image) or several (images, answered in order).",
                "paramStructure": "by-name",
                "params": [
                    param("image", ["type": "string", "contentEncoding": "base64"], "A JPEG or PNG image, base64 (standard or URL-safe, data: URLs accepted)."),
                    param("images", ["type": "array", "items": ["type": "string", "contentEncoding": "base64"]], "Several images; the result is an array in the same order."),
                    param("model", ["type": "string", "default": "auto"], "A variant's name (served as asked), a family name (the best variant for the deadline is chosen), or \"auto\" (the default model, --default-model: imagenet unless set). Without it, the default model serves. See models.list."),
                    param("top_k", ["type": "integer", "minimum": 1, "default": 5], "How many predictions to return."),
                    param("crop", ["type": "string", "enum": ["center", "fit", "fill"]], "How the image is fitted to the model input; default: the model's."),
                    param("deadline_ms", ["type": "number", "exclusiveMinimum": 0], "Time budget; with a family, the most accurate variant predicted to meet it serves; a request predicted to miss it is refused at once with -32000 deadline_unmeetable."),
                    param("min_accuracy", ["type": "number", "minimum": 0, "maximum": 1], "Only variants with at least this measured accuracy may serve."),
                    param("client_id", ["type": "string", "maxLength": 256], "Keeps a client on the same arm of an A/B split (models.traffic)."),
                ],
                "result": ["name": "classification", "schema": ["oneOf": [classifyResult, ["type": "array", "items": classifyResult]]]],
                "errors": [
                    error(-32602, "Invalid params: bad base64, undecodable or unsupported image, image too large, unknown model, bad parameter (data.reason)"),
                    error(-32000, "Server overloaded (data.reason: queue_full | deadline_unmeetable, data.retry_after_ms)"),
                    error(-32001, "Deadline exceeded"),
                    error(-32002, "Model unavailable"),
                    error(-32003, "Unauthorized"),
                ],
            ],
            [
                "name": "models.list", "summary": "The loaded models with their input specs, labels count, size, version and memory (weights, plans).",
                "params": [], "result": ["name": "models", "schema": ["type": "object"]],
            ],
            [
                "name": "models.load", "summary": "Admin: load (or reload) a model described in the server's model folder.",
                "paramStructure": "by-name",
                "params": [param("model", ["type": "string"], required: true, "Name of a model in the model folder.")],
                "result": ["name": "model", "schema": ["type": "object"]],
                "errors": [error(-32602, "Invalid params"), error(-32002, "Model unavailable: not in the folder, or it failed to load"),
                           error(-32003, "Unauthorized: needs an admin API key")],
            ],
            [
                "name": "models.reload", "summary": "Admin: replace a loaded model with a new version read from its file; the new version serves once loaded, warmed up and calibrated, the old one drains; a corrupt file is refused and the old version keeps serving.",
                "paramStructure": "by-name",
                "params": [param("model", ["type": "string"], required: true, "Name of a loaded model.")],
                "result": ["name": "model", "schema": ["type": "object"]],
                "errors": [error(-32602, "Invalid params: no such loaded model"), error(-32002, "Model unavailable: the new file failed to load (the old version keeps serving)"),
                           error(-32003, "Unauthorized: needs an admin API key")],
            ],
            [
                "name": "models.unload", "summary": "Admin: unload a model; requests waiting for it get -32002.",
                "paramStructure": "by-name",
                "params": [param("model", ["type": "string"], required: true, "Name of a loaded model.")],
                "result": ["name": "unloaded", "schema": ["type": "object", "properties": ["unloaded": ["type": "string"]]]],
                "errors": [error(-32602, "Invalid params: no such loaded model"), error(-32003, "Unauthorized: needs an admin API key")],
            ],
            [
                "name": "models.traffic", "summary": "Admin: set (or clear, with no weights) the A/B split of a family: {family, weights: {variant: weight}}.",
                "paramStructure": "by-name",
                "params": [param("family", ["type": "string"], required: true, "Family name."),
                           param("weights", ["type": "object", "additionalProperties": ["type": "integer", "minimum": 0]], "Variant name to weight; omit or empty to clear.")],
                "result": ["name": "traffic", "schema": ["type": "object"]],
                "errors": [error(-32602, "Invalid params: unknown family or variant, bad weight"), error(-32003, "Unauthorized: needs an admin API key")],
            ],
            [
                "name": "server.stats", "summary": "Queue depths, latency models and request counts per model; the selection mode and, per family, the current load split (variant shares) and arrival rate.",
                "params": [], "result": ["name": "stats", "schema": ["type": "object"]],
            ],
            [
                "name": "health", "summary": "Liveness: status, number of models, uptime.",
                "params": [], "result": ["name": "health", "schema": ["type": "object"]],
            ],
            [
                "name": "rpc.discover", "summary": "This OpenRPC document.",
                "params": [], "result": ["name": "document", "schema": ["type": "object"]],
            ],
        ],
    ]
}
