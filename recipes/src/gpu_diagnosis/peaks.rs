//! Peak rates of common GPUs: arithmetic, the denominator of model-FLOPs
//! utilization (dense, no sparsity, tensor-core rates for 16-bit types and
//! the FP32 rate a float32 matmul gets without TF32), and the host link a
//! host↔device copy crosses (per direction), per device as the trace names
//! it (one GCD of a two-die AMD package is one device). Vendor datasheet
//! figures; an answer states the row it used, and a GPU or type missing
//! here gives no figure rather than a guess.

use serde::{Deserialize, Serialize};

/// One GPU's peaks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuPeaks {
    pub gpu: &'static str,
    /// Lower-case substrings of the device name, all present.
    pub names: &'static [&'static str],
    /// SMs (CUs), when the name alone is ambiguous (H100 SXM vs PCIe).
    pub sms: Option<i64>,
    pub bf16_tflops: Option<f64>,
    pub fp16_tflops: Option<f64>,
    pub fp32_tflops: Option<f64>,
    /// The host link and its rate per direction (GB/s).
    pub host_link: Option<(&'static str, f64)>,
    pub source: &'static str,
}

const PCIE3: Option<(&str, f64)> = Some(("PCIe 3.0 x16", 15.75));
const PCIE4: Option<(&str, f64)> = Some(("PCIe 4.0 x16", 31.5));
const PCIE5: Option<(&str, f64)> = Some(("PCIe 5.0 x16", 63.0));

/// Most specific first: the first row whose names all match (and whose SM
/// count matches, when it has one) is the device's.
pub const PEAKS: &[GpuPeaks] = &[
    GpuPeaks {
        gpu: "H100 PCIe",
        names: &["h100", "pcie"],
        sms: None,
        bf16_tflops: Some(756.0),
        fp16_tflops: Some(756.0),
        fp32_tflops: Some(51.2),
        host_link: PCIE5,
        source: "NVIDIA H100 datasheet (PCIe, dense)",
    },
    GpuPeaks {
        gpu: "H100 PCIe",
        names: &["h100"],
        sms: Some(114),
        bf16_tflops: Some(756.0),
        fp16_tflops: Some(756.0),
        fp32_tflops: Some(51.2),
        host_link: PCIE5,
        source: "NVIDIA H100 datasheet (PCIe: 114 SMs, dense)",
    },
    GpuPeaks {
        gpu: "H100 NVL",
        names: &["h100", "nvl"],
        sms: None,
        bf16_tflops: Some(835.0),
        fp16_tflops: Some(835.0),
        fp32_tflops: Some(60.0),
        host_link: PCIE5,
        source: "NVIDIA H100 datasheet (NVL, dense)",
    },
    GpuPeaks {
        gpu: "H100 SXM",
        names: &["h100"],
        sms: None,
        bf16_tflops: Some(989.4),
        fp16_tflops: Some(989.4),
        fp32_tflops: Some(66.9),
        host_link: PCIE5,
        source: "NVIDIA H100 datasheet (SXM5, dense)",
    },
    GpuPeaks {
        gpu: "GH200",
        names: &["gh200"],
        sms: None,
        bf16_tflops: Some(989.4),
        fp16_tflops: Some(989.4),
        fp32_tflops: Some(66.9),
        host_link: Some(("NVLink-C2C", 450.0)),
        source: "NVIDIA GH200 datasheet (H100 SXM rates; NVLink-C2C 900 GB/s both ways)",
    },
    GpuPeaks {
        gpu: "H200 SXM",
        names: &["h200"],
        sms: None,
        bf16_tflops: Some(989.4),
        fp16_tflops: Some(989.4),
        fp32_tflops: Some(66.9),
        host_link: PCIE5,
        source: "NVIDIA H200 datasheet (SXM, dense)",
    },
    GpuPeaks {
        gpu: "H800 SXM",
        names: &["h800"],
        sms: None,
        bf16_tflops: Some(989.4),
        fp16_tflops: Some(989.4),
        fp32_tflops: Some(66.9),
        host_link: PCIE5,
        source: "H100 SXM5 figures (same GH100 die and clocks)",
    },
    GpuPeaks {
        gpu: "B200",
        names: &["b200"],
        sms: None,
        bf16_tflops: Some(2250.0),
        fp16_tflops: Some(2250.0),
        fp32_tflops: None,
        host_link: PCIE5,
        source: "NVIDIA HGX B200 datasheet (per GPU, dense)",
    },
    GpuPeaks {
        gpu: "A100",
        names: &["a100"],
        sms: None,
        bf16_tflops: Some(312.0),
        fp16_tflops: Some(312.0),
        fp32_tflops: Some(19.5),
        host_link: PCIE4,
        source: "NVIDIA A100 datasheet (dense)",
    },
    GpuPeaks {
        gpu: "V100 PCIe",
        names: &["v100", "pcie"],
        sms: None,
        bf16_tflops: None,
        fp16_tflops: Some(112.0),
        fp32_tflops: Some(14.0),
        host_link: PCIE3,
        source: "NVIDIA V100 datasheet (PCIe)",
    },
    GpuPeaks {
        gpu: "V100 SXM2",
        names: &["v100"],
        sms: None,
        bf16_tflops: None,
        fp16_tflops: Some(125.0),
        fp32_tflops: Some(15.7),
        host_link: PCIE3,
        source: "NVIDIA V100 datasheet (SXM2; no BF16 tensor cores)",
    },
    GpuPeaks {
        gpu: "MI300X",
        names: &["mi300x"],
        sms: None,
        bf16_tflops: Some(1307.4),
        fp16_tflops: Some(1307.4),
        fp32_tflops: Some(163.4),
        host_link: PCIE5,
        source: "AMD Instinct MI300X datasheet (dense; FP32 matrix)",
    },
    GpuPeaks {
        gpu: "MI250X (one GCD)",
        names: &["mi250x"],
        sms: None,
        bf16_tflops: Some(191.5),
        fp16_tflops: Some(191.5),
        fp32_tflops: Some(47.9),
        host_link: PCIE4,
        source: "AMD Instinct MI250X datasheet, halved: each GCD is one device",
    },
];

/// The peak an answer used, stated as the assumption it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeakUsed {
    pub gpu: String,
    pub dtype: String,
    pub tflops: f64,
    pub source: String,
}

/// The row for a device named `name` with `sms` SMs.
pub fn gpu_peaks(name: &str, sms: Option<i64>) -> Option<&'static GpuPeaks> {
    let lower = name.to_ascii_lowercase();
    PEAKS
        .iter()
        .find(|p| p.names.iter().all(|n| lower.contains(n)) && p.sms.is_none_or(|s| sms == Some(s)))
}

/// The host link of that device, stated as the assumption it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkUsed {
    pub gpu: String,
    pub link: String,
    pub gb_per_s: f64,
}

pub fn host_link(name: &str, sms: Option<i64>) -> Option<LinkUsed> {
    let p = gpu_peaks(name, sms)?;
    let (link, gb_per_s) = p.host_link?;
    Some(LinkUsed {
        gpu: p.gpu.to_owned(),
        link: link.to_owned(),
        gb_per_s,
    })
}

/// The peak of `dtype` (`bf16`, `fp16`, `fp32`) on that device.
pub fn peak(name: &str, sms: Option<i64>, dtype: &str) -> Option<PeakUsed> {
    let p = gpu_peaks(name, sms)?;
    let tflops = match dtype {
        "bf16" => p.bf16_tflops,
        "fp16" => p.fp16_tflops,
        "fp32" => p.fp32_tflops,
        _ => None,
    }?;
    Some(PeakUsed {
        gpu: p.gpu.to_owned(),
        dtype: dtype.to_owned(),
        tflops,
        source: p.source.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_corpus_device_names_find_their_rows() {
        for (name, sms, dtype, gpu, tflops) in [
            (
                "NVIDIA H100 80GB HBM3",
                Some(132),
                "bf16",
                "H100 SXM",
                989.4,
            ),
            ("NVIDIA H100", Some(114), "bf16", "H100 PCIe", 756.0),
            ("NVIDIA H100 PCIe", None, "fp32", "H100 PCIe", 51.2),
            ("NVIDIA A100-PG509-200", Some(108), "fp32", "A100", 19.5),
            ("NVIDIA A100-SXM4-80GB", Some(108), "bf16", "A100", 312.0),
            ("Tesla V100-SXM2-32GB", Some(80), "fp16", "V100 SXM2", 125.0),
            ("NVIDIA B200", Some(148), "bf16", "B200", 2250.0),
            ("AMD Instinct MI300X", Some(304), "bf16", "MI300X", 1307.4),
        ] {
            let p = peak(name, sms, dtype).unwrap_or_else(|| panic!("{name}"));
            assert_eq!((p.gpu.as_str(), p.tflops), (gpu, tflops), "{name}");
        }
        let gh = peak("NVIDIA GH200 480GB", Some(132), "bf16").expect("GH200");
        assert_eq!(gh.gpu, "GH200");
        assert_eq!(
            host_link("NVIDIA A100-SXM4-80GB", Some(108)).map(|l| l.gb_per_s),
            Some(31.5)
        );
        assert_eq!(
            host_link("NVIDIA GH200 480GB", None).map(|l| l.link),
            Some("NVLink-C2C".into())
        );
        // No guesses: an unnamed or generic device, BF16 on a V100, FP64.
        assert_eq!(peak("", None, "bf16"), None);
        assert_eq!(peak("AMD Radeon Graphics", None, "bf16"), None);
        assert_eq!(peak("Tesla V100-SXM2-32GB", None, "bf16"), None);
        assert_eq!(peak("NVIDIA A100-SXM4-80GB", None, "fp64"), None);
    }
}
