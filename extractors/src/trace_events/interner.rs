//! Interned strings of one extraction: names, categories, thread and
//! process labels, each stored once and named by a dense `u32`.

use crate::FastHashMap;

/// Interned strings, ids dense in first-seen order.
#[derive(Default)]
pub struct Interner {
    map: FastHashMap<Box<str>, u32>,
    strings: Vec<Box<str>>,
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = self.strings.len() as u32;
        self.strings.push(s.into());
        self.map.insert(s.into(), id);
        id
    }

    pub fn get(&self, id: u32) -> &str {
        self.strings.get(id as usize).map_or("", |s| s)
    }

    pub fn lookup(&self, s: &str) -> Option<u32> {
        self.map.get(s).copied()
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.is_empty()
    }
}
