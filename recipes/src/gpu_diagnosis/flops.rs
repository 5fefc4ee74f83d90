//! Floating-point operations of one PyTorch operator call, from what the
//! profiler recorded: its own `flops` arg (`with_flops=True`), else its
//! input shapes (`record_shapes=True`: `Input Dims`, `Concrete Inputs`)
//! for the operators that do most of a model's arithmetic — matrix
//! products, attention and convolution. Counted as PyTorch's flop counter
//! (`torch.utils.flop_counter`) does: 2 per multiply-add, a bias add and
//! attention's softmax not counted, a causal mask not halving it.

use serde_json::Value;

/// Operators whose FLOPs their shapes give. A wrapper (`aten::linear`,
/// `aten::matmul`) is absent: the product it calls is counted instead.
pub const SHAPE_OPS: &[&str] = &[
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::baddbmm",
    "aten::scaled_dot_product_attention",
    "aten::_scaled_dot_product_flash_attention",
    "aten::_scaled_dot_product_efficient_attention",
    "aten::_scaled_dot_product_cudnn_attention",
    "aten::conv1d",
    "aten::conv2d",
    "aten::conv3d",
    "aten::convolution",
    "aten::_convolution",
    "aten::cudnn_convolution",
];

/// Where a call's FLOPs come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FlopSource {
    /// The profiler's `flops` arg.
    Trace,
    /// Computed here from `Input Dims`.
    Shapes,
}

/// The element type of a call's first tensor input, named as the peak
/// table does: `bf16`, `fp16`, `fp32`, `fp64`, or what the trace wrote.
pub fn dtype(args: &Value) -> Option<String> {
    let first = args["Input type"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .find(|t| !t.is_empty() && *t != "Scalar")?;
    let t = first.trim_start_matches("c10::").to_ascii_lowercase();
    Some(
        match t.as_str() {
            "bfloat16" => "bf16",
            "half" | "float16" => "fp16",
            "float" | "float32" => "fp32",
            "double" | "float64" => "fp64",
            other => other,
        }
        .to_owned(),
    )
}

/// The call's FLOPs, when its args carry them or its shapes give them.
pub fn flops(name: &str, args: &Value) -> Option<(f64, FlopSource)> {
    if let Some(f) = args["flops"].as_f64().filter(|f| *f >= 0.0) {
        return Some((f, FlopSource::Trace));
    }
    let dims: Vec<Vec<f64>> = args["Input Dims"]
        .as_array()?
        .iter()
        .map(|d| {
            d.as_array()
                .map(|v| v.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default()
        })
        .collect();
    let shape = |i: usize| dims.get(i).map(Vec::as_slice).unwrap_or(&[]);
    let concrete = |i: usize| args["Concrete Inputs"].get(i).and_then(Value::as_str);
    let f = match name {
        "aten::mm" => matmul(shape(0), shape(1)),
        "aten::addmm" => matmul(shape(1), shape(2)),
        "aten::bmm" => batched(shape(0), shape(1)),
        "aten::baddbmm" => batched(shape(1), shape(2)),
        "aten::scaled_dot_product_attention"
        | "aten::_scaled_dot_product_flash_attention"
        | "aten::_scaled_dot_product_efficient_attention"
        | "aten::_scaled_dot_product_cudnn_attention" => attention(shape(0), shape(1), shape(2)),
        // (input, weight, bias, stride, padding, dilation, …); groups
        // follow at 6 (convNd) or 8 (convolution: transposed, output
        // padding between), and cudnn_convolution has (input, weight,
        // padding, stride, dilation, groups).
        "aten::conv1d" | "aten::conv2d" | "aten::conv3d" => {
            conv(shape(0), shape(1), [concrete(3), concrete(4), concrete(5)])
        }
        "aten::convolution" | "aten::_convolution" => match concrete(6) {
            Some("False") | Some("false") => {
                conv(shape(0), shape(1), [concrete(3), concrete(4), concrete(5)])
            }
            _ => None,
        },
        "aten::cudnn_convolution" => {
            conv(shape(0), shape(1), [concrete(3), concrete(2), concrete(4)])
        }
        _ => None,
    }?;
    (f.is_finite() && f >= 0.0).then_some((f, FlopSource::Shapes))
}

/// [M, K] × [K, N].
fn matmul(a: &[f64], b: &[f64]) -> Option<f64> {
    match (a, b) {
        ([m, k], [k2, n]) if k == k2 => Some(2.0 * m * k * n),
        _ => None,
    }
}

/// [B, M, K] × [B, K, N].
fn batched(a: &[f64], b: &[f64]) -> Option<f64> {
    match (a, b) {
        ([bt, m, k], [bt2, k2, n]) if k == k2 && bt == bt2 => Some(2.0 * bt * m * k * n),
        _ => None,
    }
}

/// q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv]: Q·Kᵀ and P·V.
fn attention(q: &[f64], k: &[f64], v: &[f64]) -> Option<f64> {
    match (q, k, v) {
        ([b, h, lq, d], [_, _, lk, d2], [_, _, lk2, dv]) if d == d2 && lk == lk2 => {
            Some(2.0 * b * h * lq * lk * (d + dv))
        }
        _ => None,
    }
}

/// input [N, Cin, spatial…], weight [Cout, Cin/groups, kernel…], with
/// stride, padding and dilation as the trace wrote them (`[1, 1]` or `1`).
fn conv(
    input: &[f64],
    weight: &[f64],
    [stride, padding, dilation]: [Option<&str>; 3],
) -> Option<f64> {
    let spatial = input.len().checked_sub(2).filter(|s| (1..=3).contains(s))?;
    if weight.len() != spatial + 2 {
        return None;
    }
    let per_dim = |text: Option<&str>| -> Option<Vec<f64>> {
        let v: Vec<f64> = text?
            .trim_matches(|c| c == '[' || c == ']')
            .split(',')
            .map(|x| x.trim().parse::<f64>().ok())
            .collect::<Option<_>>()?;
        match v.len() {
            1 => Some(vec![v[0]; spatial]),
            n if n == spatial => Some(v),
            _ => None,
        }
    };
    let (stride, padding, dilation) = (per_dim(stride)?, per_dim(padding)?, per_dim(dilation)?);
    let mut outputs = 1.0;
    for i in 0..spatial {
        let extent = input[i + 2] + 2.0 * padding[i] - dilation[i] * (weight[i + 2] - 1.0) - 1.0;
        if stride[i] <= 0.0 || extent < 0.0 {
            return None;
        }
        outputs *= (extent / stride[i]).floor() + 1.0;
    }
    let kernel: f64 = weight[2..].iter().product();
    // Cout × (Cin / groups) × kernel multiply-adds per output position.
    Some(2.0 * input[0] * weight[0] * weight[1] * kernel * outputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn products_attention_and_convolution_count_two_per_multiply_add() {
        let addmm = json!({"Input Dims": [[512], [141, 512], [512, 512], [], []],
            "Input type": ["c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar"]});
        assert_eq!(
            flops("aten::addmm", &addmm),
            Some((2.0 * 141.0 * 512.0 * 512.0, FlopSource::Shapes))
        );
        assert_eq!(dtype(&addmm).as_deref(), Some("bf16"));
        let bmm = json!({"Input Dims": [[4, 8, 16], [4, 16, 2]]});
        assert_eq!(
            flops("aten::bmm", &bmm).map(|f| f.0),
            Some(2.0 * 4.0 * 8.0 * 16.0 * 2.0)
        );
        let sdpa = json!({"Input Dims": [[1, 8, 141, 64], [1, 8, 141, 64], [1, 8, 141, 64], []]});
        assert_eq!(
            flops("aten::scaled_dot_product_attention", &sdpa).map(|f| f.0),
            Some(2.0 * 8.0 * 141.0 * 141.0 * 128.0)
        );
        // ResNet's first layer: 224² input, 7×7 kernel, stride 2, padding
        // 3 → 112² outputs × 64 channels × 3 × 49 multiply-adds.
        let conv = json!({"Input Dims": [[1, 3, 224, 224], [64, 3, 7, 7], []],
            "Concrete Inputs": ["", "", "", "[2, 2]", "[3, 3]", "[1, 1]", "1"]});
        assert_eq!(
            flops("aten::conv2d", &conv).map(|f| f.0),
            Some(2.0 * 64.0 * 3.0 * 49.0 * 112.0 * 112.0)
        );
        // The profiler's own count wins.
        let counted = json!({"flops": 1234, "Input Dims": [[2, 2], [2, 2]]});
        assert_eq!(
            flops("aten::mm", &counted),
            Some((1234.0, FlopSource::Trace))
        );
    }

    #[test]
    fn shapes_that_do_not_fit_give_nothing() {
        for (name, args) in [
            ("aten::mm", json!({"Input Dims": [[2, 3], [4, 5]]})),
            ("aten::mm", json!({"Input Dims": [[2, 3]]})),
            ("aten::addmm", json!({})),
            ("aten::linear", json!({"Input Dims": [[2, 3], [3, 3]]})),
            (
                "aten::conv2d",
                json!({"Input Dims": [[1, 3, 8, 8], [4, 3, 3, 3]],
                "Concrete Inputs": ["", "", "", "same", "0", "1", "1"]}),
            ),
            (
                "aten::convolution",
                json!({"Input Dims": [[1, 3, 8, 8], [4, 3, 3, 3]],
                "Concrete Inputs": ["", "", "", "[1, 1]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"]}),
            ),
            (
                "aten::mm",
                json!({"Input Dims": [[1e300, 1e300], [1e300, 1e300]]}),
            ),
        ] {
            assert_eq!(flops(name, &args), None, "{name} {args}");
        }
    }
}
