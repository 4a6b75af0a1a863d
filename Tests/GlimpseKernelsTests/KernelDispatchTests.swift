import Foundation
import GlimpseKernels
import XCTest

/// The CPU probe and the choice of kernel variant (`GLIMPSE_ISA`).
final class KernelDispatchTests: XCTestCase {
    /// cpuid/xgetbv agree with the kernel's own view of the CPU in /proc/cpuinfo.
    func testProbeAgreesWithProcCPUInfo() throws {
        let info = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let flagsLine = try XCTUnwrap(info.split(separator: "\n").first { $0.hasPrefix("flags") })
        let flags = Set(flagsLine.split(separator: " ").map(String.init))
        let cpu = CPUFeatures.current
        XCTAssertEqual(cpu.contains(.avx2), flags.contains("avx2") && flags.contains("fma"), "\(cpu)")
        XCTAssertEqual(cpu.contains(.avx512f), flags.contains("avx512f"), "\(cpu)")
        XCTAssertEqual(cpu.contains(.avx512vnni), flags.contains("avx512_vnni"), "\(cpu)")
        XCTAssertEqual(cpu.contains(.avxvnni), flags.contains("avx_vnni"), "\(cpu)")
    }

    func testBestVariantTheCPUAndTheBinaryHave() throws {
        XCTAssertEqual(try KernelDispatch.choose(requested: nil, features: []), .portable)
        let best = try KernelDispatch.choose(requested: nil)
        XCTAssertEqual(best, KernelDispatch.available.last)
        XCTAssertTrue(CPUFeatures.current.contains(best.requirement))
        XCTAssertTrue(KernelDispatch.available.contains(.portable))
        if CPUFeatures.current.contains(.avx2) {
            XCTAssertTrue(KernelDispatch.available.contains(.avx2), "every x86-64 build has the AVX2 kernels")
            XCTAssertEqual(try KernelDispatch.choose(requested: "avx2"), .avx2)
            XCTAssertEqual(try KernelDispatch.choose(requested: "AVX2"), .avx2)
        }
    }

    func testAVariantTheCPULacksIsAClearError() {
        XCTAssertThrowsError(try KernelDispatch.choose(requested: "avx512vnni", features: [.avx2])) {
            let text = "\($0)"
            XCTAssertTrue(text.contains("GLIMPSE_ISA=avx512vnni"), text)
            XCTAssertTrue(text.contains("this CPU lacks it (its features: avx2+fma)"), text)
        }
        XCTAssertThrowsError(try KernelDispatch.choose(requested: "avx512", features: [])) {
            XCTAssertTrue("\($0)".contains("its features: no AVX2"), "\($0)")
        }
        XCTAssertThrowsError(try KernelDispatch.choose(requested: "sse9")) {
            XCTAssertTrue("\($0)".contains("is not one of portable, avx2, avx512, avx512vnni"), "\($0)")
        }
    }
}
