//! The descriptive tables of an Nsight Systems export: `StringIds` (read
//! whole, first), thread and process names, GPU descriptions, the export's
//! own metadata, and which tables with rows are not read at all.

use super::*;

impl Reader<'_> {
    pub(super) fn read_strings(&mut self) -> Result<(), ExtractError> {
        let Some(t) = self.schema.table("StringIds") else {
            return Ok(());
        };
        let mut n = 0;
        let source = self.source;
        source.for_each_row(&t, &[&["id"], &["value"]], &mut |row| {
            if let (Some(id), Some(v)) = (int(row, 0), text(row, 1)) {
                let s = self.p.strings.intern(&v);
                self.ids.insert(id, s);
            }
            n += 1;
            Ok(())
        })?;
        self.count("StringIds", n);
        Ok(())
    }

    pub(super) fn read_names(&mut self) -> Result<(), ExtractError> {
        if let Some(t) = self.schema.table("ThreadNames") {
            let mut n = 0;
            let source = self.source;
            source.for_each_row(&t, &[&["nameId", "name"], &["globalTid"]], &mut |row| {
                n += 1;
                let (Some(name), Some(g)) = (self.name_at(row, 0), int(row, 1)) else {
                    return Ok(());
                };
                self.p
                    .tracks
                    .thread_names
                    .insert((Ident::Int(pid_of(g)), Ident::Int(tid_of(g))), name);
                Ok(())
            })?;
            self.count("ThreadNames", n);
        }
        if let Some(t) = self.schema.table("PROCESSES") {
            let mut n = 0;
            let source = self.source;
            source.for_each_row(&t, &[&["name"], &["pid"], &["globalPid"]], &mut |row| {
                n += 1;
                let pid = int(row, 2).map(pid_of).or_else(|| int(row, 1));
                let (Some(name), Some(pid)) = (self.name_at(row, 0), pid) else {
                    return Ok(());
                };
                self.p.tracks.process_names.insert(Ident::Int(pid), name);
                Ok(())
            })?;
            self.count("PROCESSES", n);
        }
        Ok(())
    }

    /// Device names (`TARGET_INFO_GPU`, keyed by CUDA device) for track
    /// names and the summary.
    pub(super) fn read_devices(&mut self) -> Result<Vec<Value>, ExtractError> {
        let mut gpus = Vec::new();
        let Some(t) = self.schema.table("TARGET_INFO_GPU") else {
            return Ok(gpus);
        };
        let fields: [&[&str]; 14] = [
            &["id"],
            &["name"],
            &["cuDevice"],
            &["busLocation"],
            &["totalMemory"],
            &["smCount"],
            &["chipName"],
            &["computeMajor"],
            &["computeMinor"],
            &["maxWarpsPerSm"],
            &["maxBlocksPerSm"],
            &["maxRegistersPerSm"],
            &["maxShmemPerSm"],
            &["threadsPerWarp"],
        ];
        let mut gpu_name: FastHashMap<i64, String> = FastHashMap::default();
        {
            let source = self.source;
            source.for_each_row(&t, &fields, &mut |row| {
                let id = int(row, 0);
                let name = text(row, 1);
                let cu = int(row, 2);
                let mut g = Map::new();
                for (key, v) in [("id", id), ("cuda_device", cu)] {
                    if let Some(v) = v {
                        g.insert(key.into(), json!(v));
                    }
                }
                if let Some(n) = &name {
                    g.insert("name".into(), json!(n));
                }
                if let Some(b) = text(row, 3) {
                    g.insert("bus_location".into(), json!(b));
                }
                for (key, i) in [("total_memory", 4), ("sm_count", 5)] {
                    if let Some(v) = int(row, i) {
                        g.insert(key.into(), json!(v));
                    }
                }
                if let Some(c) = text(row, 6) {
                    g.insert("chip".into(), json!(c));
                }
                // The SM resources theoretical occupancy is judged against
                // (`analyze_gpu_diagnosis`, launch geometry).
                if let (Some(major), Some(minor)) = (int(row, 7), int(row, 8)) {
                    g.insert("compute_capability".into(), json!([major, minor]));
                }
                for (key, i) in [
                    ("max_warps_per_sm", 9),
                    ("max_blocks_per_sm", 10),
                    ("max_registers_per_sm", 11),
                    ("max_shared_memory_per_sm", 12),
                    ("threads_per_warp", 13),
                ] {
                    if let Some(v) = int(row, i) {
                        g.insert(key.into(), json!(v));
                    }
                }
                gpus.push(Value::Object(g));
                if let (Some(id), Some(n)) = (id, &name) {
                    gpu_name.insert(id, n.clone());
                }
                if let (Some(cu), Some(n)) = (cu, name) {
                    self.device_names.entry(cu).or_insert(n);
                }
                Ok(())
            })?;
        }
        // TARGET_INFO_CUDA_DEVICE maps CUDA ids to GPU ids when present.
        if let Some(t) = self.schema.table("TARGET_INFO_CUDA_DEVICE") {
            let source = self.source;
            source.for_each_row(&t, &[&["gpuId"], &["cudaId"]], &mut |row| {
                if let (Some(gpu), Some(cuda)) = (int(row, 0), int(row, 1))
                    && let Some(n) = gpu_name.get(&gpu)
                {
                    self.device_names.insert(cuda, n.clone());
                }
                Ok(())
            })?;
        }
        Ok(gpus)
    }

    /// `name → value` of the export metadata table, if any.
    pub(super) fn export_metadata(&self) -> Result<BTreeMap<String, String>, ExtractError> {
        let mut out = BTreeMap::new();
        let Some(t) = self
            .schema
            .first_table(&["META_DATA_EXPORT", "EXPORT_META_DATA"])
        else {
            return Ok(out);
        };
        let source = self.source;
        source.for_each_row(&t, &[&["name"], &["value"]], &mut |row| {
            if let (Some(k), Some(v)) = (text(row, 0), text(row, 1)) {
                out.insert(k, v);
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// Tables holding events that this extractor does not read.
    pub(super) fn tables_not_extracted(&self) -> Result<Vec<String>, ExtractError> {
        let read: FastHashSet<String> = ACTIVITY_TABLES
            .iter()
            .chain(&OTHER_READ_TABLES)
            .map(|t| t.to_ascii_lowercase())
            .chain(["export_meta_data".to_string()])
            .collect();
        let mut out = Vec::new();
        for name in self.schema.table_names() {
            let upper = name.to_ascii_uppercase();
            if read.contains(&name.to_ascii_lowercase())
                || DESCRIPTIVE_PREFIXES.iter().any(|p| upper.starts_with(p))
                || upper == "STRINGIDS"
            {
                continue;
            }
            let has_rows = match self.schema.table(name) {
                Some(t) => self.source.has_rows(&t)?,
                None => false,
            };
            if has_rows {
                out.push(name.to_string());
            }
        }
        Ok(out)
    }
}
