//! The per-table readers of an Nsight Systems export: kernels, runtime and
//! driver API, memcpy, memset, synchronization, graph trace and NVTX, each
//! reading its columns (matched across nsys versions) in bounded batches.

use super::*;

/// CUPTI's "no stream" value in `streamId`.
const NO_STREAM: i64 = 0xFFFF_FFFF;

impl Reader<'_> {
    pub(super) fn read_kernels(&mut self, t: &TableSel) -> Result<(), ExtractError> {
        let fields: [&[&str]; 22] = [
            &["start"],
            &["end"],
            &["deviceId"],
            &["contextId"],
            &["streamId"],
            &["correlationId"],
            &["globalPid", "globalTid"],
            &["demangledName"],
            &["shortName"],
            &["mangledName"],
            &["name"],
            &["gridX"],
            &["gridY"],
            &["gridZ"],
            &["blockX"],
            &["blockY"],
            &["blockZ"],
            &["registersPerThread"],
            &["staticSharedMemory"],
            &["dynamicSharedMemory"],
            &["graphId"],
            &["graphNodeId"],
        ];
        let cat = self.cat("kernel");
        let mut n = 0;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let name = self
                .name_at(row, 7)
                .or_else(|| self.name_at(row, 8))
                .or_else(|| self.name_at(row, 9))
                .or_else(|| self.name_at(row, 10));
            let name = name.unwrap_or_else(|| {
                self.p.log.note("unnamed_kernel", || {
                    "a kernel has no name in StringIds; named `<unknown kernel>`".to_string()
                });
                self.p.strings.intern("<unknown kernel>")
            });
            let kind = self.kind_of("kernel", cat, name, false);
            // The track (its name interned) before the short name, as always.
            let on_stream = self.stream_row(row, false, name, cat, kind, true);
            let short = self.name_at(row, 8).filter(|&short| short != name);
            let dims = |a: usize| -> Option<[i64; 3]> {
                Some([int(row, a)?, int(row, a + 1)?, int(row, a + 2)?])
            };
            args.clear();
            if let Some(b) = dims(14) {
                args.int_array("block", &b);
            }
            args.opt_int("dynamic_shared_memory", int(row, 19));
            if let Some(g) = dims(11) {
                args.int_array("grid", &g);
            }
            args.opt_int("registers_per_thread", int(row, 17));
            if let Some(short) = short {
                args.str("short_name", self.p.strings.get(short));
            }
            args.opt_int("static_shared_memory", int(row, 18));
            let ev = Ev {
                graph_id: int(row, 20),
                graph_node_id: int(row, 21),
                ..on_stream
            };
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.count(t.name, n);
        Ok(())
    }

    /// A row of a per-stream table (kernel, memcpy, memset, sync, graph
    /// trace): times in fields 0–1, device / context / stream 2–4,
    /// correlation 5, `globalPid` 6; on the stream's track (`sync`: its
    /// synchronization track). Graph ids and bytes are the caller's.
    fn stream_row(
        &mut self,
        row: &dyn RowView,
        sync: bool,
        name: u32,
        cat: u32,
        kind: EventKind,
        device_activity: bool,
    ) -> Ev {
        // CUPTI writes 0xFFFFFFFF for "no stream" (a device- or context-wide
        // synchronization): that is no stream, not stream 4294967295.
        let stream = int(row, 4).filter(|&s| s != NO_STREAM);
        let (device, context) = (int(row, 2), int(row, 3));
        let track = self.stream_track(
            sync,
            int(row, 6),
            device.unwrap_or(NONE),
            context.unwrap_or(NONE),
            stream.unwrap_or(NONE),
        );
        Ev {
            device_activity,
            device,
            context,
            stream,
            correlation: int(row, 5),
            ..Ev::at(row, name, cat, kind, track)
        }
    }

    /// Host calls on their thread: CUDA runtime or driver API calls
    /// (`cuda_runtime`, `cuda_driver`) or OS runtime calls (`os_runtime`,
    /// which have no correlation id).
    pub(super) fn read_calls(
        &mut self,
        t: &TableSel,
        category: &'static str,
    ) -> Result<(), ExtractError> {
        let fields: [&[&str]; 7] = [
            &["start"],
            &["end"],
            &["globalTid"],
            &["correlationId"],
            &["nameId"],
            &["name"],
            &["returnValue"],
        ];
        let cat = self.cat(category);
        let mut n = 0;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let name = self.name_at(row, 4).or_else(|| self.name_at(row, 5));
            let name = name.unwrap_or_else(|| {
                self.p.log.note("unnamed_api_call", || {
                    "a traced call has no name in StringIds; named `<unknown call>`".to_string()
                });
                self.p.strings.intern("<unknown call>")
            });
            let kind = self.kind_of(category, cat, name, true);
            let track = self.thread_track(int(row, 2));
            args.clear();
            args.opt_int("return_value", int(row, 6).filter(|&r| r != 0));
            let ev = Ev {
                correlation: int(row, 3),
                ..Ev::at(row, name, cat, kind, track)
            };
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.count(t.name, n);
        Ok(())
    }

    pub(super) fn read_memcpy(&mut self, t: &TableSel) -> Result<(), ExtractError> {
        let fields: [&[&str]; 14] = [
            &["start"],
            &["end"],
            &["deviceId"],
            &["contextId"],
            &["streamId"],
            &["correlationId"],
            &["globalPid", "globalTid"],
            &["bytes"],
            &["copyKind"],
            &["srcKind"],
            &["dstKind"],
            &["graphNodeId"],
            &["srcDeviceId"],
            &["dstDeviceId"],
        ];
        let cat = self.cat("gpu_memcpy");
        let mut n = 0;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let copy = int(row, 8);
            let (src, dst) = (int(row, 9), int(row, 10));
            let name = self.label((MEMCPY_TABLE, copy, src, dst), || match (src, dst) {
                (Some(s), Some(d)) => format!(
                    "Memcpy {} ({} -> {})",
                    copy_kind(copy),
                    mem_kind(s),
                    mem_kind(d)
                ),
                _ => format!("Memcpy {}", copy_kind(copy)),
            });
            args.clear();
            args.opt_int("copy_kind", copy);
            args.opt_int("dst_device", int(row, 13));
            args.opt_int("dst_kind", dst);
            args.opt_int("src_device", int(row, 12));
            args.opt_int("src_kind", src);
            let ev = Ev {
                graph_node_id: int(row, 11),
                bytes: int(row, 7),
                ..self.stream_row(row, false, name, cat, EventKind::Memcpy, true)
            };
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.count(t.name, n);
        Ok(())
    }

    pub(super) fn read_memset(&mut self, t: &TableSel) -> Result<(), ExtractError> {
        let fields: [&[&str]; 11] = [
            &["start"],
            &["end"],
            &["deviceId"],
            &["contextId"],
            &["streamId"],
            &["correlationId"],
            &["globalPid", "globalTid"],
            &["bytes"],
            &["value"],
            &["memKind"],
            &["graphNodeId"],
        ];
        let cat = self.cat("gpu_memset");
        let mut n = 0;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let mem = int(row, 9);
            let name = self.label((MEMSET_TABLE, mem, None, None), || match mem {
                Some(k) => format!("Memset ({})", mem_kind(k)),
                None => "Memset".to_string(),
            });
            args.clear();
            args.opt_int("mem_kind", mem);
            args.opt_int("value", int(row, 8));
            let ev = Ev {
                graph_node_id: int(row, 10),
                bytes: int(row, 7),
                ..self.stream_row(row, false, name, cat, EventKind::Memset, true)
            };
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.count(t.name, n);
        Ok(())
    }

    pub(super) fn read_sync(&mut self, t: &TableSel) -> Result<(), ExtractError> {
        let fields: [&[&str]; 9] = [
            &["start"],
            &["end"],
            &["deviceId"],
            &["contextId"],
            &["streamId"],
            &["correlationId"],
            &["globalPid", "globalTid"],
            &["syncType"],
            &["eventId"],
        ];
        let cat = self.cat("cuda_sync");
        let mut n = 0;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let sync_type = int(row, 7);
            let name = self.label((SYNC_TABLE, sync_type, None, None), || {
                sync_name(sync_type).to_string()
            });
            args.clear();
            args.opt_int("event_id", int(row, 8));
            args.opt_int("sync_type", sync_type);
            let ev = self.stream_row(row, true, name, cat, EventKind::Sync, false);
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.count(t.name, n);
        Ok(())
    }

    pub(super) fn read_graph_trace(&mut self, t: &TableSel) -> Result<(), ExtractError> {
        let fields: [&[&str]; 9] = [
            &["start"],
            &["end"],
            &["deviceId"],
            &["contextId"],
            &["streamId"],
            &["correlationId"],
            &["globalPid", "globalTid"],
            &["graphId"],
            &["graphExecId"],
        ];
        let cat = self.cat("cuda_graph_trace");
        let mut n = 0;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let graph = int(row, 7);
            let name = self.label((GRAPH_TRACE_TABLE, graph, None, None), || match graph {
                Some(g) => format!("CUDA graph {g}"),
                None => "CUDA graph".to_string(),
            });
            args.clear();
            args.opt_int("graph_exec_id", int(row, 8));
            let ev = Ev {
                graph_id: graph,
                ..self.stream_row(row, false, name, cat, EventKind::GraphLaunch, true)
            };
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.count(t.name, n);
        Ok(())
    }

    pub(super) fn read_nvtx(&mut self, t: &TableSel) -> Result<(), ExtractError> {
        // Domain names first: ranges refer to them by id.
        let mut domains: FastHashMap<i64, String> = FastHashMap::default();
        if t.table.has(&["domainId"]) && t.table.has(&["eventType"]) {
            let source = self.source;
            let fields: [&[&str]; 4] = [&["domainId"], &["text"], &["textId"], &["eventType"]];
            source.for_each_row(&t.table, &fields, &mut |row| {
                if int(row, 3) != Some(NVTX_DOMAIN_CREATE) {
                    return Ok(());
                }
                let name = text(row, 1).filter(|s| !s.is_empty()).or_else(|| {
                    int(row, 2)
                        .and_then(|id| self.ids.get(&id))
                        .map(|&s| self.p.strings.get(s).to_string())
                });
                if let (Some(d), Some(name)) = (int(row, 0), name) {
                    domains.insert(d, name);
                }
                Ok(())
            })?;
        }
        let fields: [&[&str]; 9] = [
            &["start"],
            &["end"],
            &["eventType"],
            &["text"],
            &["textId"],
            &["globalTid"],
            &["domainId"],
            &["category"],
            &["endGlobalTid"],
        ];
        let cat = self.cat("nvtx");
        let mut n = 0;
        let mut other = 0u64;
        let mut args = ArgsJson::default();
        let source = self.source;
        source.for_each_row(&t.table, &fields, &mut |row| {
            self.poll()?;
            n += 1;
            let event_type = int(row, 2);
            let (instant, start_end) = match event_type {
                Some(NVTX_PUSH_POP | NVTXT_PUSH_POP) => (false, false),
                Some(NVTX_START_END | NVTXT_START_END) => (false, true),
                Some(NVTX_MARK) => (true, false),
                Some(NVTX_DOMAIN_CREATE | NVTX_THREAD) | Some(33) | Some(76) => return Ok(()),
                _ => {
                    other += 1;
                    return Ok(());
                }
            };
            let name = self
                .name_at(row, 3)
                .or_else(|| self.name_at(row, 4))
                .unwrap_or_else(|| self.p.strings.intern("<unnamed NVTX range>"));
            let global_tid = int(row, 5);
            let track = if start_end {
                self.range_track(global_tid)
            } else {
                self.thread_track(global_tid)
            };
            args.clear();
            args.opt_int("category", int(row, 7));
            if let Some(d) = int(row, 6).filter(|&d| d != 0) {
                match domains.get(&d) {
                    Some(name) => args.str("domain", name),
                    None => args.int("domain_id", d),
                };
            }
            if start_end
                && let (Some(a), Some(b)) = (global_tid, int(row, 8))
                && a != b
            {
                args.int("end_tid", tid_of(b));
            }
            let kind = if instant {
                EventKind::Instant
            } else {
                EventKind::NvtxRange
            };
            let ev = Ev {
                instant,
                ..Ev::at(row, name, cat, kind, track)
            };
            self.push(ev, args.finish());
            Ok(())
        })?;
        self.p
            .log
            .note_n("nvtx_event_type_not_extracted", other, || {
                "NVTX rows of other event types (payload-only, meta) are counted but not extracted"
                    .to_string()
            });
        self.count(t.name, n);
        Ok(())
    }
}
