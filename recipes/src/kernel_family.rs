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

/// Names longer than this are cut in answers that list several (a
/// templated kernel's name can run to 5 KB); the trace window gives them whole.
pub const READABLE_NAME_CHARS: usize = 160;

/// A name an answer can list: itself when short, else its family with
/// `<…>` (cut to [`READABLE_NAME_CHARS`] with `…` if still long).
pub fn readable_name(name: &str) -> String {
    if name.chars().count() <= READABLE_NAME_CHARS {
        return name.to_owned();
    }
    let family = kernel_family(name);
    let text = if family.len() < name.len() {
        format!("{family}<…>")
    } else {
        family
    };
    if text.chars().count() <= READABLE_NAME_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(READABLE_NAME_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// `flameox_kernel_family(name)` as an expression.
pub fn kernel_family_expr(name: Expr) -> Expr {
    crate::text_udf::text_udf("flameox_kernel_family", family_of_text, name)
}

/// The `flameox_kernel_family` UDF itself.
pub fn kernel_family_udf() -> datafusion::logical_expr::ScalarUDF {
    crate::text_udf::text_udf_function("flameox_kernel_family", family_of_text)
}

fn family_of_text(text: &str) -> Option<String> {
    Some(kernel_family(text))
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

    #[test]
    fn long_names_read_as_their_family_short_ones_stay() {
        use super::{READABLE_NAME_CHARS, readable_name};
        assert_eq!(readable_name("aten::mm"), "aten::mm");
        let long = format!("void k<{}>(int)", "float, ".repeat(100));
        assert_eq!(readable_name(&long), "k<…>");
        let no_family = "x".repeat(500);
        let cut = readable_name(&no_family);
        assert_eq!(cut.chars().count(), READABLE_NAME_CHARS);
        assert!(cut.ends_with('…'));
    }
}
