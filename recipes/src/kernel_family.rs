//! A kernel's family: its name without template arguments, parameter list
//! or `void` return type. A profile of a hundred template instantiations
//! of five kernels reads as the five families it is
//! (`void cutlass::Kernel2<cutlass_80_tensorop_…>(Params)` → `cutlass::Kernel2`).

use datafusion::logical_expr::Expr;

/// The family of a kernel name (the name itself when it has no templates
/// or parameters).
pub fn kernel_family(name: &str) -> String {
    let name = name.trim();
    let name = name.strip_prefix("void ").unwrap_or(name);
    // Template arguments at any depth go; `operator<` and `->` are rare in
    // kernel names and an unbalanced `>` simply ends nothing.
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    // A trailing parameter list goes; `(anonymous namespace)` inside stays.
    if out.ends_with(')') {
        let mut level = 0usize;
        for (i, c) in out.char_indices().rev() {
            match c {
                ')' => level += 1,
                '(' => {
                    level -= 1;
                    if level == 0 {
                        out.truncate(i);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    let family = out.trim();
    if family.is_empty() {
        name.to_owned()
    } else {
        family.to_owned()
    }
}

/// `flameox_kernel_family(name)` as an expression.
pub fn kernel_family_expr(name: Expr) -> Expr {
    crate::text_udf::text_udf(
        "flameox_kernel_family",
        |text| Some(kernel_family(text)),
        name,
    )
}

#[cfg(test)]
mod tests {
    use super::kernel_family;

    #[test]
    fn templates_parameters_and_void_go_anonymous_namespaces_stay() {
        assert_eq!(
            kernel_family(
                "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8::Params)"
            ),
            "cutlass::Kernel2"
        );
        assert_eq!(
            kernel_family(
                "void at::native::(anonymous namespace)::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>, std::array<char*, 3ul> >(int, at::native::AddFunctor<float>, std::array<char*, 3ul>)"
            ),
            "at::native::(anonymous namespace)::vectorized_elementwise_kernel"
        );
        assert_eq!(
            kernel_family("ampere_sgemm_128x64_nn"),
            "ampere_sgemm_128x64_nn"
        );
        assert_eq!(kernel_family("saxpy(int, float, float*, float*)"), "saxpy");
        assert_eq!(kernel_family("  "), "");
        assert_eq!(kernel_family("a>b"), "a>b");
    }
}
