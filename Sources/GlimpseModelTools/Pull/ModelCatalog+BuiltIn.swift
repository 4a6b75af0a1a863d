// The fallback for `models/catalog.json`, used when that file cannot be found (an installed binary).
// Keep it equal to the file: ModelCatalogTests checks that they match.
extension ModelCatalog {
    static let builtInJSON = #"""
{
  "comment": "Models that `glimpse models pull NAME` can fetch. Each URL is the upstream file; with --url-base (or GLIMPSE_PULL_URL_BASE) every file is fetched from <base>/<file name of the url> instead. sha256_source says where each checksum comes from; Sources/GlimpseModelTools/Pull/ModelCatalog+BuiltIn.swift holds the same table, used when this file cannot be found.",
  "files": {
    "imagenet_classes.txt": {
      "url": "https://raw.githubusercontent.com/pytorch/hub/c7895df70c7767403e36f82786d6b611b7984557/imagenet_classes.txt",
      "sha256": "1f386e0d1cb6e28b9c2dac651c3dea6801e98ad1b41a14ce6bb1a093d72069f5",
      "size": 10472,
      "sha256_source": "verified: computed from a copy of this exact upstream file (pytorch/hub at that commit)"
    }
  },
  "models": {
    "squeezenet1.1": {
      "url": "https://github.com/onnx/models/raw/main/validated/vision/classification/squeezenet/model/squeezenet1.1-7.onnx",
      "sha256": "1eeff551a67ae8d565ca33b572fc4b66e3ef357b0eb2863bb9ff47a918cc4088",
      "size": 4956208,
      "sha256_source": "onnx/models ONNX_HUB_MANIFEST.json (model_sha); not verified against a local copy",
      "files": ["imagenet_classes.txt"],
      "metadata": {"preprocessing": "torch", "labels": "imagenet_classes.txt", "family": "squeezenet1.1", "variant": "fp32"}
    },
    "mobilenetv2": {
      "url": "https://github.com/onnx/models/raw/main/validated/vision/classification/mobilenet/model/mobilenetv2-12.onnx",
      "sha256": "c0c3f76d93fa3fd6580652a45618618a220fced18babf65774ed169de0432ad5",
      "size": 13964571,
      "sha256_source": "onnx/models ONNX_HUB_MANIFEST.json (model_sha); not verified against a local copy",
      "files": ["imagenet_classes.txt"],
      "metadata": {"preprocessing": "torch", "labels": "imagenet_classes.txt", "family": "mobilenetv2", "variant": "fp32"}
    },
    "resnet50": {
      "url": "https://github.com/onnx/models/raw/main/validated/vision/classification/resnet/model/resnet50-v1-12.onnx",
      "sha256": "3f03fdef724b22947eed826f1eef1dc5c34151bb4c37d634f1db89dfa2dd1526",
      "size": 102576593,
      "sha256_source": "onnx/models ONNX_HUB_MANIFEST.json (model_sha); not verified against a local copy",
      "files": ["imagenet_classes.txt"],
      "metadata": {"preprocessing": "torch", "labels": "imagenet_classes.txt", "family": "resnet50", "variant": "fp32"}
    },
    "shufflenet-v2-qdq": {
      "url": "https://github.com/onnx/models/raw/main/validated/vision/classification/shufflenet/model/shufflenet-v2-12-qdq.onnx",
      "sha256": "7c536d02e2f6af9569e5f3c7a4d8282060072119524c93c8da71e63876b4722b",
      "size": 2415805,
      "sha256_source": "verified: onnx/models ONNX_HUB_MANIFEST.json model_sha equals sha256sum of a byte-identical copy of the zoo file",
      "files": ["imagenet_classes.txt"],
      "metadata": {"preprocessing": "torch", "labels": "imagenet_classes.txt", "family": "shufflenet-v2", "variant": "int8-qdq"}
    },
    "mnist-8": {
      "url": "https://github.com/onnx/models/raw/main/validated/vision/classification/mnist/model/mnist-8.onnx",
      "sha256": "2f06e72de813a8635c9bc0397ac447a601bdbfa7df4bebc278723b958831c9bf",
      "size": 26454,
      "sha256_source": "verified: the Git LFS pointer of validated/.../mnist-8.onnx names this oid and size, and sha256sum of a byte-identical copy agrees",
      "files": [],
      "metadata": {"preprocessing": "mnist", "family": "mnist", "variant": "mnist-8"}
    }
  }
}
"""#
}
