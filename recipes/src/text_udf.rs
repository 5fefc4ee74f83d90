//! A scalar UDF from a plain Rust function on text: `f(&str) -> Option<String>`
//! applied row by row to a Utf8 column (null in, null out; `None`, null).
//! Recipes use it where a per-row text rule (a kernel's family, an
//! operator's input shapes) must stay inside a DataFusion plan.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::Result as DfResult;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::cast;

#[derive(Debug)]
struct TextUdf {
    name: &'static str,
    map: fn(&str) -> Option<String>,
    signature: Signature,
}

// A UDF is known by its name (each name is registered with one function).
impl PartialEq for TextUdf {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for TextUdf {}

impl std::hash::Hash for TextUdf {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl ScalarUDFImpl for TextUdf {
    fn name(&self) -> &str {
        self.name
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> DfResult<DataType> {
        Ok(DataType::Utf8)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> DfResult<ColumnarValue> {
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let mut out = StringBuilder::new();
        if let Some(input) = arrays.first() {
            let text = input.as_string::<i32>();
            for i in 0..text.len() {
                match text
                    .is_valid(i)
                    .then(|| (self.map)(text.value(i)))
                    .flatten()
                {
                    Some(value) => out.append_value(value),
                    None => out.append_null(),
                }
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish()) as ArrayRef))
    }
}

/// The UDF `name` that applies `map` to each row.
pub fn text_udf_function(name: &'static str, map: fn(&str) -> Option<String>) -> ScalarUDF {
    ScalarUDF::new_from_impl(TextUdf {
        name,
        map,
        signature: Signature::exact(vec![DataType::Utf8], Volatility::Immutable),
    })
}

/// `name(text)` as an expression that applies `map` to each row.
pub fn text_udf(name: &'static str, map: fn(&str) -> Option<String>, text: Expr) -> Expr {
    text_udf_function(name, map).call(vec![cast(text, DataType::Utf8)])
}

/// Every text UDF a recipe's plan may name: a distributed engine that
/// decodes plans by function name registers these on every process.
pub fn recipe_udfs() -> Vec<Arc<ScalarUDF>> {
    vec![
        Arc::new(crate::kernel_family::kernel_family_udf()),
        Arc::new(crate::input_shapes::input_dims_udf()),
        Arc::new(crate::gpu_summary::api_name_udf_function()),
    ]
}
