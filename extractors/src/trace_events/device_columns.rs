//! The device, stream and correlation fields of the kept events, stored
//! sparsely.
//!
//! Eight optional integers (device, context, stream, correlation, external
//! id, graph id, graph node id, bytes) are 64 bytes per event, but most host
//! events have none of them: every Perfetto track event, Python function
//! and user annotation. So [`DeviceColumns`] keeps a 4-byte row number per
//! event and the fields only for events that have at least one.

use super::ids::{NO_ID, NONE};

/// The device-side fields of one event; [`NONE`] where absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceFields {
    pub device: i64,
    pub context: i64,
    pub stream: i64,
    pub correlation: i64,
    pub external: i64,
    pub graph_id: i64,
    pub graph_node_id: i64,
    pub bytes: i64,
}

impl DeviceFields {
    /// An event with none of the fields.
    pub const ABSENT: DeviceFields = DeviceFields {
        device: NONE,
        context: NONE,
        stream: NONE,
        correlation: NONE,
        external: NONE,
        graph_id: NONE,
        graph_node_id: NONE,
        bytes: NONE,
    };

    pub fn is_absent(&self) -> bool {
        *self == DeviceFields::ABSENT
    }

    /// The fields in declaration order (the spill records' byte order).
    pub fn to_array(&self) -> [i64; 8] {
        [
            self.device,
            self.context,
            self.stream,
            self.correlation,
            self.external,
            self.graph_id,
            self.graph_node_id,
            self.bytes,
        ]
    }

    /// The inverse of [`DeviceFields::to_array`].
    pub fn from_array(v: [i64; 8]) -> Self {
        let [
            device,
            context,
            stream,
            correlation,
            external,
            graph_id,
            graph_node_id,
            bytes,
        ] = v;
        DeviceFields {
            device,
            context,
            stream,
            correlation,
            external,
            graph_id,
            graph_node_id,
            bytes,
        }
    }
}

/// One [`DeviceFields`] per event, with absent ones taking 4 bytes.
#[derive(Default)]
pub struct DeviceColumns {
    /// Per event: its index in `fields`, or [`NO_ID`] when it has none.
    row: Vec<u32>,
    fields: Vec<DeviceFields>,
}

impl DeviceColumns {
    pub fn len(&self) -> usize {
        self.row.len()
    }

    pub fn is_empty(&self) -> bool {
        self.row.is_empty()
    }

    pub fn push(&mut self, f: DeviceFields) {
        if f.is_absent() {
            self.row.push(NO_ID);
        } else {
            self.row.push(self.fields.len() as u32);
            self.fields.push(f);
        }
    }

    /// Event `i`'s fields.
    pub fn get(&self, i: usize) -> DeviceFields {
        match self.row[i] {
            NO_ID => DeviceFields::ABSENT,
            r => self.fields[r as usize],
        }
    }

    pub fn correlation(&self, i: usize) -> i64 {
        match self.row[i] {
            NO_ID => NONE,
            r => self.fields[r as usize].correlation,
        }
    }

    pub fn set_correlation(&mut self, i: usize, correlation: i64) {
        match self.row[i] {
            NO_ID => {
                self.row[i] = self.fields.len() as u32;
                self.fields.push(DeviceFields {
                    correlation,
                    ..DeviceFields::ABSENT
                });
            }
            r => self.fields[r as usize].correlation = correlation,
        }
    }

    /// Whether any event's fields satisfy `test`.
    pub fn any(&self, test: impl Fn(&DeviceFields) -> bool) -> bool {
        self.fields.iter().any(test)
    }

    /// Keeps only the events `keep` (ascending), renumbered from 0.
    pub fn retain_rows(&mut self, keep: &[usize]) {
        let mut fields = Vec::with_capacity(keep.len().min(self.fields.len()));
        for (new, &old) in keep.iter().enumerate() {
            let r = self.row[old];
            self.row[new] = if r == NO_ID {
                NO_ID
            } else {
                fields.push(self.fields[r as usize]);
                (fields.len() - 1) as u32
            };
        }
        self.row.truncate(keep.len());
        self.fields = fields;
    }

    /// Lowers capacity to at most `rows` events (not below the length).
    pub fn shrink_to(&mut self, rows: usize) {
        self.row.shrink_to(rows);
        self.fields.shrink_to(rows);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_stream(stream: i64) -> DeviceFields {
        DeviceFields {
            stream,
            ..DeviceFields::ABSENT
        }
    }

    #[test]
    fn only_events_with_a_field_take_a_row_and_every_event_reads_back() {
        let mut c = DeviceColumns::default();
        let events: Vec<DeviceFields> = (0..100)
            .map(|i| {
                if i % 3 == 0 {
                    with_stream(i)
                } else {
                    DeviceFields::ABSENT
                }
            })
            .collect();
        for &e in &events {
            c.push(e);
        }
        assert_eq!(c.fields.len(), 34);
        for (i, e) in events.iter().enumerate() {
            assert_eq!(c.get(i), *e);
        }
        assert!(c.any(|f| f.stream == 99));
        assert!(!c.any(|f| f.correlation != NONE));
    }

    #[test]
    fn a_correlation_set_later_reads_back_on_absent_and_present_events() {
        let mut c = DeviceColumns::default();
        c.push(DeviceFields::ABSENT);
        c.push(with_stream(7));
        c.set_correlation(0, 11);
        c.set_correlation(1, 12);
        assert_eq!(c.correlation(0), 11);
        assert_eq!(c.get(0).stream, NONE);
        assert_eq!(
            c.get(1),
            DeviceFields {
                correlation: 12,
                ..with_stream(7)
            }
        );
    }

    #[test]
    fn retained_rows_keep_their_fields_and_drop_the_others() {
        let mut c = DeviceColumns::default();
        for i in 0..10 {
            c.push(if i % 2 == 0 {
                with_stream(i)
            } else {
                DeviceFields::ABSENT
            });
        }
        // Event 3 gains a field after the others, out of row order.
        c.set_correlation(3, 33);
        c.retain_rows(&[3, 4, 5, 8]);
        assert_eq!(c.len(), 4);
        assert_eq!(c.get(0).correlation, 33);
        assert_eq!(c.get(1), with_stream(4));
        assert_eq!(c.get(2), DeviceFields::ABSENT);
        assert_eq!(c.get(3), with_stream(8));
        assert_eq!(c.fields.len(), 3);
    }
}
