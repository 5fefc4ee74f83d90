//! Small Arrow helpers shared by the extractors' batch builders.
//!
//! Every table starts with two dictionary columns holding one value for the
//! whole batch (`run_id`, `artifact_id`), and many string columns are
//! dictionary-encoded; these helpers build them without per-row allocation.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, DictionaryArray, Int32Array, StringArray, StringBuilder, StringDictionaryBuilder,
};
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

/// A dictionary-encoded Utf8 column whose values come with a stable id (an
/// interned string, an enum): rows are deduplicated by id, so the text of a
/// row is neither hashed nor compared (long kernel names made that ~5 % of
/// an Nsight import). The array equals what [`DictColumn`] builds from the
/// same texts (keys in first-seen order) as long as equal ids mean equal
/// texts and distinct ids distinct texts.
#[derive(Default)]
pub struct IdDictColumn {
    key_of: crate::FastHashMap<u32, i32>,
    keys: Vec<Option<i32>>,
    values: StringBuilder,
}

impl IdDictColumn {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends the value `text` known by `id` (`None`: a null row); `text`
    /// is only read the first time `id` appears.
    pub fn push<'s>(&mut self, value: Option<(u32, impl FnOnce() -> &'s str)>) {
        let key = value.map(|(id, text)| {
            let next = self.key_of.len() as i32;
            *self.key_of.entry(id).or_insert_with(|| {
                self.values.append_value(text());
                next
            })
        });
        self.keys.push(key);
    }

    pub fn finish(mut self) -> ArrayRef {
        let keys: Int32Array = self.keys.into_iter().collect();
        let values = Arc::new(self.values.finish());
        match DictionaryArray::<Int32Type>::try_new(keys, values.clone()) {
            Ok(array) => Arc::new(array),
            // Unreachable: every key indexes a value appended above.
            Err(_) => {
                let mut b = StringDictionaryBuilder::<Int32Type>::new();
                for v in values.iter() {
                    b.append_option(v);
                }
                Arc::new(b.finish())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Array;

    #[test]
    fn id_dict_column_equals_dict_column() {
        let texts = ["b", "a", ""];
        let rows = [
            Some(0u32),
            None,
            Some(1),
            Some(0),
            Some(2),
            None,
            Some(1),
            Some(2),
        ];
        let mut by_id = IdDictColumn::new();
        let mut by_text = DictColumn::new();
        for row in rows {
            by_id.push(row.map(|id| (id, move || texts[id as usize])));
            by_text.push(row.map(|id| texts[id as usize]));
        }
        let (by_id, by_text) = (by_id.finish(), by_text.finish());
        assert_eq!(by_id.len(), 8);
        assert_eq!(by_id.null_count(), 2);
        assert_eq!(&by_id, &by_text);
        assert!(IdDictColumn::new().finish().is_empty());
    }
}
