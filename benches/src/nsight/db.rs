//! The tables of the generated Nsight Systems export: the DDL (column names,
//! order and types as `nsys export --type sqlite` 2025.x writes them, minus
//! the comments) and one prepared insert per event table.

use rusqlite::{Connection, Statement, ToSql, params};

/// `CREATE TABLE` statements, in the order nsys creates them.
pub const DDL: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ThreadNames (nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);
CREATE TABLE PROCESSES (globalPid INTEGER, pid INTEGER, name TEXT);
CREATE TABLE TARGET_INFO_GPU (vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT,
  busLocation TEXT, isDiscrete INTEGER, l2CacheSize INTEGER, totalMemory INTEGER,
  memoryBandwidth INTEGER, clockRate INTEGER, smCount INTEGER, uuid TEXT, chipName TEXT,
  cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);
CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER NOT NULL, pid INTEGER NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, mangledName INTEGER,
  launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,
  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,
  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,
  sharedMemoryLimitConfig INTEGER, graphId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL, deprecatedSrcId INTEGER,
  srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
  dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER, copyCount INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  deprecatedSyncType INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL,
  eventSyncId INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
  endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, uint64Value INTEGER,
  int64Value INTEGER, doubleValue REAL, uint32Value INTEGER, int32Value INTEGER,
  floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE ENUM_CUPTI_SYNC_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE META_DATA_EXPORT (name TEXT NOT NULL, value TEXT);
";

/// Enum rows nsys writes for the codes the generator uses.
pub const ENUMS: &str = "
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown'),
  (1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device'),(2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host'),
  (8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES (0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown'),
  (1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync'),
  (3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME','flameox-gen (Nsight Systems export shape)'),
  ('EXPORT_SCHEMA_VERSION','3.24.0'),('EXPORT_SCHEMA_VERSION_MAJOR','3'),
  ('EXPORT_SCHEMA_VERSION_MINOR','24'),('EXPORT_PLATFORM','linux-desktop'),('EXPORT_ARCH','x64');
";

/// Where a device activity ran.
#[derive(Debug, Clone, Copy)]
pub struct On {
    pub device: i64,
    pub context: i64,
    pub stream: i64,
    pub global_pid: i64,
}

/// One kernel row.
pub struct KernelRow {
    pub start: i64,
    pub end: i64,
    pub on: On,
    pub correlation: i64,
    /// demangled, short, mangled `StringIds` ids.
    pub names: [i64; 3],
    pub registers: i64,
    pub grid: [i64; 3],
    pub block: [i64; 3],
    pub static_smem: i64,
    pub dynamic_smem: i64,
    pub grid_id: i64,
    /// (graphId, graphNodeId) of a kernel launched as a graph node.
    pub graph: Option<(i64, i64)>,
}

/// A copy or memset row: `kind` is copyKind (memcpy) or memKind (memset).
pub struct MemRow {
    pub start: i64,
    pub end: i64,
    pub on: On,
    pub correlation: i64,
    pub bytes: i64,
    pub kind: i64,
    pub src_dst: (i64, i64),
}

/// An NVTX row: a push/pop range (`end` set), or a mark / domain create.
pub struct NvtxRow<'a> {
    pub start: i64,
    pub end: Option<i64>,
    pub event_type: i64,
    pub text: Option<&'a str>,
    pub text_id: Option<i64>,
    pub global_tid: i64,
    pub domain: i64,
    pub color: Option<i64>,
}

/// Prepared inserts, one per event table.
pub struct Inserts<'c> {
    runtime: Statement<'c>,
    kernel: Statement<'c>,
    memcpy: Statement<'c>,
    memset: Statement<'c>,
    sync: Statement<'c>,
    nvtx: Statement<'c>,
}

impl<'c> Inserts<'c> {
    pub fn new(conn: &'c Connection) -> rusqlite::Result<Inserts<'c>> {
        Ok(Inserts {
            runtime: conn.prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1,?2,0,?3,?4,?5,0,NULL)",
            )?,
            kernel: conn.prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1,?2,?3,?4,0,?5,?6,?7,?8,?9,?10,
                 CASE WHEN ?23 IS NULL THEN 1 ELSE 3 END,1,?11,?12,?13,?14,?15,?16,?17,?18,?19,0,0,
                 ?20,?19 + ?18,?21,0,?22)",
            )?,
            memcpy: conn.prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1,?2,?3,?4,0,?5,?6,?7,?8,?9,NULL,
                 ?10,?11,?3,?4,?3,?4,NULL,NULL,NULL,1)",
            )?,
            memset: conn.prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?1,?2,?3,?4,0,?5,?6,?7,0,?8,NULL,?9)",
            )?,
            sync: conn.prepare(
                "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES
                 (?1,?2,?3,?4,NULL,?5,?6,?7,NULL,3,4294967295,4294967295)",
            )?,
            nvtx: conn.prepare(
                "INSERT INTO NVTX_EVENTS (start,end,eventType,color,text,globalTid,textId,domainId)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8)",
            )?,
        })
    }

    pub fn runtime(
        &mut self,
        start: i64,
        end: i64,
        global_tid: i64,
        correlation: i64,
        name_id: i64,
    ) -> rusqlite::Result<()> {
        self.runtime
            .execute(params![start, end, global_tid, correlation, name_id])
            .map(drop)
    }

    pub fn kernel(&mut self, k: &KernelRow) -> rusqlite::Result<()> {
        let (graph_id, node) = match k.graph {
            Some((g, n)) => (Some(g), Some(n)),
            None => (None, None),
        };
        self.kernel
            .execute(params![
                k.start,
                k.end,
                k.on.device,
                k.on.context,
                k.on.stream,
                k.correlation,
                k.on.global_pid,
                k.names[0],
                k.names[1],
                k.names[2],
                k.registers,
                k.grid[0],
                k.grid[1],
                k.grid[2],
                k.block[0],
                k.block[1],
                k.block[2],
                k.static_smem,
                k.dynamic_smem,
                k.grid_id,
                node,
                graph_id,
                node,
            ])
            .map(drop)
    }

    pub fn memcpy(&mut self, m: &MemRow) -> rusqlite::Result<()> {
        mem_row(&mut self.memcpy, m, &[&m.src_dst.0, &m.src_dst.1])
    }

    pub fn memset(&mut self, m: &MemRow) -> rusqlite::Result<()> {
        mem_row(&mut self.memset, m, &[])
    }

    pub fn sync(&mut self, start: i64, end: i64, on: On, correlation: i64) -> rusqlite::Result<()> {
        self.sync
            .execute(params![
                start,
                end,
                on.device,
                on.context,
                on.stream,
                correlation,
                on.global_pid
            ])
            .map(drop)
    }

    pub fn nvtx(&mut self, n: &NvtxRow<'_>) -> rusqlite::Result<()> {
        self.nvtx
            .execute(params![
                n.start,
                n.end,
                n.event_type,
                n.color,
                n.text,
                n.global_tid,
                n.text_id,
                n.domain
            ])
            .map(drop)
    }
}

/// Inserts a copy or memset row: the shared columns, then `extra`.
fn mem_row(stmt: &mut Statement<'_>, m: &MemRow, extra: &[&dyn ToSql]) -> rusqlite::Result<()> {
    let shared: [&dyn ToSql; 9] = [
        &m.start,
        &m.end,
        &m.on.device,
        &m.on.context,
        &m.on.stream,
        &m.correlation,
        &m.on.global_pid,
        &m.bytes,
        &m.kind,
    ];
    let all: Vec<&dyn ToSql> = shared.iter().chain(extra).copied().collect();
    stmt.execute(all.as_slice()).map(drop)
}
