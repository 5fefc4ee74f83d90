//! Small Arrow helpers shared by the extractors' batch builders.
//!
//! Every table starts with two dictionary columns holding one value for the
//! whole batch (`run_id`, `artifact_id`), and many string columns are
//! dictionary-encoded; these helpers build them without per-row allocation.

use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, Int32Array, StringArray, StringDictionaryBuilder};
use arrow::datatypes::Int32Type;

/// A dictionary column of `len` copies of `value`.
pub fn const_dict(value: &str, len: usize) -> ArrayRef {
    let keys = Int32Array::from(vec![0i32; len]);
    let values = Arc::new(StringArray::from(vec![value]));
    match DictionaryArray::<Int32Type>::try_new(keys, values) {
        Ok(array) => Arc::new(array),
        // Unreachable: key 0 always indexes the one value.
        Err(_) => {
            let mut b = StringDictionaryBuilder::<Int32Type>::new();
            (0..len).for_each(|_| b.append_value(value));
            Arc::new(b.finish())
        }
    }
}

/// Builds one dictionary-encoded Utf8 column.
pub struct DictColumn {
    builder: StringDictionaryBuilder<Int32Type>,
}

impl Default for DictColumn {
    fn default() -> Self {
        Self::new()
    }
}

impl DictColumn {
    pub fn new() -> Self {
        DictColumn {
            builder: StringDictionaryBuilder::new(),
        }
    }

    pub fn push(&mut self, value: Option<&str>) {
        match value {
            Some(v) => self.builder.append_value(v),
            None => self.builder.append_null(),
        }
    }

    pub fn finish(mut self) -> ArrayRef {
        Arc::new(self.builder.finish())
    }
}
