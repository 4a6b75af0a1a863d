import Foundation
import GlimpseEngine
import GlimpseServing

/// The method table of the Glimpse JSON-RPC API.
public enum GlimpseMethods {
    /// Methods that change what the server runs; they need an admin API key when keys are configured.
    public static let adminMethods: Set<String> = ["models.load", "models.reload", "models.unload", "models.traffic"]

    public static func table(service: InferenceService, modelDirectory: String? = nil,
                             startedAt: Date = Date()) -> [String: RPCDispatcher.Handler] {
        [
            "classify": { params, _ in
                try await classify(service: service, params: try ClassifyParams(params, limits: service.configuration))
            },
            "models.list": { params, _ in
                _ = try Params(params, method: "models.list")
                return .object(["models": .array(service.registry.all.map(describe))])
            },
            "models.load": { params, _ in
                let name = try modelName(params, method: "models.load")
                guard let modelDirectory else { throw RPCError.invalidParams("this server has no model folder to load from") }
                return describe(try await service.load(named: name, directory: modelDirectory))
            },
            "models.reload": { params, _ in
                // A new version of a loaded model from its file: it serves once loaded, warmed up and
                // calibrated; the old version drains. Unlike `models.load`, the model must be loaded.
                let name = try modelName(params, method: "models.reload")
                guard service.registry.all.contains(where: { $0.name == name }) else {
                    throw RPCError.invalidParams("no loaded model named \"\(name)\"", reason: "unknown_model")
                }
                guard let modelDirectory else { throw RPCError.invalidParams("this server has no model folder to load from") }
                return describe(try await service.load(named: name, directory: modelDirectory))
            },
            "models.unload": { params, _ in
                let name = try modelName(params, method: "models.unload")
                guard service.registry.unload(name) else {
                    throw RPCError.invalidParams("no loaded model named \"\(name)\"", reason: "unknown_model")
                }
                return .object(["unloaded": .string(name)])
            },
            "models.traffic": { params, _ in
                let p = try Params(params, method: "models.traffic")
                try p.rejectUnknown(allowed: ["family", "weights"], method: "models.traffic")
                guard let family = try p.string("family") else { throw RPCError.invalidParams("missing \"family\"") }
                var weights: [String: Int] = [:]
                switch p.object["weights"] {
                case nil, .null?: break
                case .object(let o)?:
                    for (k, v) in o {
                        guard let w = v.intValue else { throw RPCError.invalidParams("weight of \"\(k)\" must be an integer") }
                        weights[k] = w
                    }
                default: throw RPCError.invalidParams("\"weights\" must be an object of variant name to integer weight")
                }
                try service.setTraffic(family: family, weights: weights)
                return .object(["family": .string(family),
                                "weights": .object((service.traffic[family] ?? [:]).mapValues { .int($0) })])
            },
            "rpc.discover": { _, _ in OpenRPCDocument.document },
            "server.stats": { _, _ in stats(service: service, startedAt: startedAt) },
            "health": { _, _ in
                .object(["status": "ok", "models": .int(service.registry.all.count),
                         "uptime_s": .double((Date().timeIntervalSince(startedAt) * 1000).rounded() / 1000)])
            },
        ]
    }

    /// The one parameter of `models.load`, `models.reload` and `models.unload`.
    static func modelName(_ params: JSONValue?, method: String) throws -> String {
        let p = try Params(params, method: method)
        try p.rejectUnknown(allowed: ["model"], method: method)
        guard let name = try p.string("model") else { throw RPCError.invalidParams("missing \"model\"") }
        return name
    }

    static func stats(service: InferenceService, startedAt: Date) -> JSONValue {
        .object([
            "uptime_s": .double((Date().timeIntervalSince(startedAt) * 1000).rounded() / 1000),
            "models": .object(Dictionary(uniqueKeysWithValues: service.registry.all.map { m in
                let s = m.stats
                return (m.name, JSONValue.object([
                    "queue_length": .int(s.queueLength),
                    "latency_model": .object(["per_item_ms": rounded(s.perItemNanos / 1e6), "per_batch_ms": rounded(s.perBatchNanos / 1e6),
                                              "batches_observed": .int(s.batchesObserved)]),
                ]))
            })),
            "selection": .string(service.configuration.selection.rawValue),
            "isa": .string(EngineInfo.isa),
            "request_overhead_us": service.requestOverheadNanos.map { rounded($0 / 1e3) } ?? .null,
            "request_overhead_by_variant_us": .object(service.variantOverheadNanos.mapValues { rounded($0 / 1e3) }),
            "available_cores": rounded(service.availableCores),
            "split": .object(service.loadSplit.mapValues { split in
                .object(["arrival_rate": rounded(split.arrivalRate),
                         "shares": .object(split.shares.mapValues { rounded($0) }),
                         "capacities": .object(split.capacities.mapValues { rounded($0) })])
            }),
        ])
    }

    /// Runs `classify` (JSON-RPC or REST): one result object for a single image, else an array.
    public static func classify(service: InferenceService, params: ClassifyParams) async throws -> JSONValue {
        let encoded = try await service.classify(params.request).map(encode)
        return params.single ? encoded[0] : .array(encoded)
    }

    /// A short, bounded label for an error (its `data.reason`, else its code).
    public static func reasonLabel(_ e: RPCError) -> String {
        e.data?["reason"]?.stringValue ?? String(e.code)
    }

    static func rounded(_ ms: Double) -> JSONValue { .double((ms * 1000).rounded() / 1000) }

    static func score(_ f: Float) -> JSONValue { .double(Double("\(f)") ?? Double(f)) }

    public static func encode(_ r: ClassifyResult) -> JSONValue {
        .object([
            "model": .string(r.model),
            "variant": .string(r.variant),
            "version": .string(r.version),
            "reason": .string(r.reason),
            "predictions": .array(r.predictions.map {
                .object(["label": .string($0.label), "index": .int($0.index), "score": score($0.score)])
            }),
            "timing_ms": .object(["queue": rounded(r.timing.queue), "decode": rounded(r.timing.decode),
                                  "inference": rounded(r.timing.inference), "total": rounded(r.timing.total)]),
            "batch_size": .int(r.batchSize),
            "energy_mj": rounded(r.energyMillijoules),
            "image": .object(["format": .string(r.image.format), "width": .int(r.image.width), "height": .int(r.image.height)]),
        ])
    }

    static func memory(_ m: LoadedModel.Memory) -> JSONValue {
        .object(["weights_bytes": .int(m.weightBytes), "plans_bytes": .int(m.planBytes),
                 "plans": .int(m.plans), "total_bytes": .int(m.totalBytes),
                 "plans_by_batch": .object(Dictionary(uniqueKeysWithValues: m.plansByBatch.map { (String($0.key), .int($0.value)) }))])
    }

    static func describe(_ m: LoadedModel) -> JSONValue {
        let p = m.metadata.preprocessing
        return .object([
            "name": .string(m.name),
            "family": .string(m.metadata.family),
            "variant": .string(m.metadata.variant),
            "version": .string(m.metadata.version),
            "accuracy": m.metadata.accuracy.map { .double($0) } ?? .null,
            "accuracy_dataset": m.metadata.accuracyDataset.map { .string($0) } ?? .null,
            "file": .string(m.metadata.file),
            "size_bytes": .int(m.fileBytes),
            "memory": memory(m.memory),
            "labels": .int(m.labels.count),
            "inputs": .array(m.model.inputs.map { .object(["name": .string($0.name), "shape": .array($0.shape.map { .int($0) }), "dtype": .string($0.dtype.rawValue)]) }),
            "outputs": .array(m.model.outputs.map { .object(["name": .string($0.name), "shape": .array($0.shape.map { .int($0) }), "dtype": .string($0.dtype.rawValue)]) }),
            "preprocessing": .object([
                "width": .int(p.width), "height": .int(p.height),
                "resize_short_side": p.resizeShortSide.map { .int($0) } ?? .null,
                "crop": .string(p.crop.rawValue), "channel_order": .string(p.channelOrder.rawValue),
                "layout": .string(p.layout.rawValue), "scale": .double(Double(p.scale)),
                "mean": .array(p.mean.map { .double(Double($0)) }), "std": .array(p.std.map { .double(Double($0)) }),
                "dtype": .string(p.dtype.rawValue),
            ]),
        ])
    }
}
