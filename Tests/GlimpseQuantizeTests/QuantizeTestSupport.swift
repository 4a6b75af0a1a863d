import Foundation
import GlimpseImage
import GlimpseTestSupport

extension SharedData {
    /// The torchvision / ImageNet preprocessing of squeezenet1.1 (the `imagenet` preset).
    static let imagenet = Preprocessing(width: 224, height: 224, resizeShortSide: 256, crop: .center, channelOrder: .rgb,
                                        scale: 1.0 / 255.0, mean: [0.485, 0.456, 0.406], std: [0.229, 0.224, 0.225])
}
