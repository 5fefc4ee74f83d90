//! The export's schema (SQLite or export folder): which tables exist, their columns (matched
//! case-insensitively from candidate lists, since names moved between nsys
//! versions), and a fingerprint of the whole layout.

use std::collections::{BTreeMap, HashMap};

use rusqlite::Connection;
use sha2::{Digest, Sha256};

/// Every table of the file with its columns in declaration order.
pub struct Schema {
    /// Lower-case table name → (actual name, columns).
    tables: BTreeMap<String, (String, Vec<String>)>,
}

/// Quotes an identifier for SQL (`"a""b"`).
pub fn quote(ident: &str) -> String {
    format!("\"{}\"", ident.replace('"', "\"\""))
}

impl Schema {
    pub fn read(conn: &Connection) -> rusqlite::Result<Schema> {
        let mut names = Vec::new();
        {
            let mut stmt = conn.prepare(
                // Tables only: a view runs SQL the file's author wrote (a
                // recursive one never ends), and nsys exports have none.
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name",
            )?;
            let mut rows = stmt.query([])?;
            while let Some(row) = rows.next()? {
                names.push(row.get::<_, String>(0)?);
            }
        }
        let mut tables = BTreeMap::new();
        for name in names {
            let mut stmt = conn.prepare(&format!("PRAGMA table_info({})", quote(&name)))?;
            let mut rows = stmt.query([])?;
            let mut cols = Vec::new();
            while let Some(row) = rows.next()? {
                cols.push(row.get::<_, String>(1)?);
            }
            tables.insert(name.to_ascii_lowercase(), (name, cols));
        }
        Ok(Schema { tables })
    }

    /// A schema from `(table, columns)` pairs (an export folder's files).
    pub fn from_tables(tables: Vec<(String, Vec<String>)>) -> Schema {
        Schema {
            tables: tables
                .into_iter()
                .map(|(name, cols)| (name.to_ascii_lowercase(), (name, cols)))
                .collect(),
        }
    }

    /// The table named `name` (any case).
    pub fn table(&self, name: &str) -> Option<Table> {
        self.tables
            .get(&name.to_ascii_lowercase())
            .map(|(actual, cols)| Table {
                name: actual.clone(),
                columns: cols
                    .iter()
                    .map(|c| (c.to_ascii_lowercase(), c.clone()))
                    .collect(),
            })
    }

    /// The first of `names` that exists.
    pub fn first_table(&self, names: &[&str]) -> Option<Table> {
        names.iter().find_map(|n| self.table(n))
    }

    /// sha256 over `table:col,col\n` lines of every table, in name order.
    pub fn fingerprint(&self) -> String {
        let mut h = Sha256::new();
        for (actual, cols) in self.tables.values() {
            h.update(actual.as_bytes());
            h.update(b":");
            h.update(cols.join(",").as_bytes());
            h.update(b"\n");
        }
        hex::encode(h.finalize())
    }

    /// Actual names of all tables.
    pub fn table_names(&self) -> impl Iterator<Item = &str> {
        self.tables.values().map(|(n, _)| n.as_str())
    }
}

/// One table and its columns.
pub struct Table {
    pub name: String,
    columns: HashMap<String, String>,
}

impl Table {
    /// The actual name of the first candidate column that exists.
    pub fn column(&self, candidates: &[&str]) -> Option<&str> {
        candidates.iter().find_map(|c| {
            self.columns
                .get(&c.to_ascii_lowercase())
                .map(String::as_str)
        })
    }

    pub fn has(&self, candidates: &[&str]) -> bool {
        self.column(candidates).is_some()
    }

    /// `SELECT` of one expression per field (the column, or `NULL` when no
    /// candidate exists), in `fields` order, plus an optional `WHERE`.
    pub fn select(&self, fields: &[&[&str]], filter: Option<&str>) -> String {
        let exprs: Vec<String> = fields
            .iter()
            .map(|cands| self.column(cands).map_or("NULL".to_string(), quote))
            .collect();
        let mut sql = format!("SELECT {} FROM {}", exprs.join(", "), quote(&self.name));
        if let Some(f) = filter {
            sql.push_str(" WHERE ");
            sql.push_str(f);
        }
        sql
    }
}
