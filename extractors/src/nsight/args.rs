//! The `args_json` text of one Nsight row, written straight into a buffer
//! reused across rows instead of through a `serde_json::Value` map (which
//! allocated a map, its keys and a string per row: ~3 % of an import).
//!
//! The text is exactly what `Value::Object(map).to_string()` gave before:
//! serde_json's map (no `preserve_order`) is a `BTreeMap`, so keys come out
//! sorted and each reader adds its keys in ascending order (checked in debug
//! builds); strings go through serde_json's own escaping. The test below
//! compares both for every kind of value.

/// One JSON object being written.
#[derive(Default)]
pub struct ArgsJson {
    buf: Vec<u8>,
    /// The last key written, to check the order in debug builds.
    last_key: &'static str,
}

impl ArgsJson {
    /// Starts a new, empty object.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.last_key = "";
    }

    fn key(&mut self, key: &'static str) {
        debug_assert!(
            self.buf.is_empty() || key > self.last_key,
            "args keys must be added in ascending order ({} after {})",
            key,
            self.last_key
        );
        self.last_key = key;
        self.buf.push(if self.buf.is_empty() { b'{' } else { b',' });
        self.write_str(key);
        self.buf.push(b':');
    }

    /// A string or number as serde_json writes it (escaping, digits);
    /// writing into a `Vec` cannot fail.
    fn write_value(&mut self, v: &(impl serde::Serialize + ?Sized)) {
        if serde_json::to_writer(&mut self.buf, v).is_err() {
            self.buf.extend_from_slice(b"null");
        }
    }

    fn write_str(&mut self, s: &str) {
        self.write_value(s);
    }

    fn write_int(&mut self, v: i64) {
        self.write_value(&v);
    }

    /// `"key":v`.
    pub fn int(&mut self, key: &'static str, v: i64) {
        self.key(key);
        self.write_int(v);
    }

    /// `"key":v` when `v` is present.
    pub fn opt_int(&mut self, key: &'static str, v: Option<i64>) {
        if let Some(v) = v {
            self.int(key, v);
        }
    }

    /// `"key":"text"`.
    pub fn str(&mut self, key: &'static str, text: &str) {
        self.key(key);
        self.write_str(text);
    }

    /// `"key":[a,b,c]`.
    pub fn int_array(&mut self, key: &'static str, values: &[i64]) {
        self.key(key);
        self.buf.push(b'[');
        for (k, &v) in values.iter().enumerate() {
            if k > 0 {
                self.buf.push(b',');
            }
            self.write_int(v);
        }
        self.buf.push(b']');
    }

    /// The finished object, or `None` when no key was added.
    pub fn finish(&mut self) -> Option<&str> {
        if self.buf.is_empty() {
            return None;
        }
        self.buf.push(b'}');
        // Only `&str` and ASCII were written, so this never fails.
        std::str::from_utf8(&self.buf).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Map, Value, json};

    #[test]
    fn same_text_as_a_serde_json_map() {
        let tricky = "a\"b\\c\n\t\r\u{1}\u{1f}\u{7f}é/✓\u{8}\u{c}";
        let mut a = ArgsJson::default();
        a.clear();
        a.int_array("block", &[128, 1, 1]);
        a.int("dynamic_shared_memory", 0);
        a.int_array("grid", &[-1, i64::MAX, i64::MIN]);
        a.opt_int("missing", None);
        a.str("short_name", tricky);
        a.opt_int("static_shared_memory", Some(-42));
        let mut m = Map::new();
        m.insert("static_shared_memory".into(), json!(-42));
        m.insert("short_name".into(), json!(tricky));
        m.insert("grid".into(), json!([-1, i64::MAX, i64::MIN]));
        m.insert("dynamic_shared_memory".into(), json!(0));
        m.insert("block".into(), json!([128, 1, 1]));
        assert_eq!(a.finish(), Some(Value::Object(m).to_string().as_str()));

        a.clear();
        assert_eq!(a.finish(), None);
        a.clear();
        a.int("return_value", 2);
        assert_eq!(a.finish(), Some(r#"{"return_value":2}"#));
    }
}
