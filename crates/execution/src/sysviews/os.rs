//! The operating system as SQLOS's views show it: sys.dm_os_sys_info (the machine, the
//! process, the server's start) and sys.dm_os_schedulers (one scheduler per CPU).
//!
//! tessera has no SQLOS: no schedulers of its own, no workers pool, no quantum. A busy
//! connection's request runs on one OS thread of the process's blocking pool, and Linux
//! schedules the threads. So these views describe what Linux tells about the process
//! (`/proc/self`, `/proc/self/task/*`, `/sys/devices/system`), with SQL Server's columns,
//! and only when they are read: nothing here runs on any other path.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use super::{bit, col, int, s, Rows, ViewDef};
use crate::runtime::ExecCtx;
use tessera_semantics::types::{SqlType::*, Value};
use tessera_waits::WaitType;

/// The threads a request may run on: tokio's blocking pool (which serves a busy
/// connection's request) makes at most this many, its default, which the server keeps.
const MAX_WORKERS: i64 = 512;

/// A thread's stack when `RUST_MIN_STACK` does not say: Rust's (and so tokio's) default.
const DEFAULT_STACK_BYTES: i64 = 2 << 20;

/// SQLOS's quantum (4 ms), when Linux does not tell its own time slice.
const SQLOS_QUANTUM_US: i64 = 4_000;

/// Clock ticks per second of `/proc`'s CPU times (`USER_HZ`: 100 on every architecture
/// tessera builds for).
const USER_HZ: u64 = 100;

/// A user-mode address space of 47 bits (as sys.dm_os_process_memory reports it).
const ADDRESS_SPACE_BYTES: u64 = 1 << 47;

/// `sys.dm_os_sys_info`: SQL Server 2019's columns, in its order, from the machine and the
/// process. Needs VIEW SERVER STATE.
///
/// - `cpu_count`: the CPUs the process may run on now (its threads' affinity: the CPUs
///   it was started on, narrowed by sp_configure 'affinity mask'), not every CPU of the
///   machine; `scheduler_count` is the same, `scheduler_total_count` adds the CPUs the
///   mask leaves out (their schedulers are VISIBLE OFFLINE). tessera has no hidden
///   schedulers.
/// - `hyperthread_ratio`, `socket_count`, `cores_per_socket`, `numa_node_count`: the
///   machine's topology (`/sys/devices/system`): logical CPUs per socket, sockets,
///   physical cores per socket, NUMA nodes (1 when Linux shows none).
/// - `cpu_ticks`: nanoseconds of the system's monotonic clock (one tick is 1 ns, so
///   `cpu_ticks / (cpu_ticks / ms_ticks)` is `ms_ticks`, as scripts compute it), not the
///   processor's time-stamp counter; `ms_ticks`: milliseconds of that clock (time since
///   boot, without suspends); `sqlserver_start_time_ms_ticks` and `sqlserver_start_time`:
///   when this server's instance was assembled at startup, recorded once (the datetime in
///   the session's time zone, as GETDATE).
/// - `physical_memory_kb`: the memory the server may use (the machine's, or its cgroup's
///   limit when tighter, as sys.dm_os_sys_memory); `virtual_memory_kb`: a 47-bit user
///   address space; `committed_kb`: the buffer pool's pages and the log buffers
///   (Total Server Memory); `committed_target_kb` and `visible_target_kb`: the pool's
///   target (Target Server Memory).
/// - `stack_size_in_bytes`: a thread's stack (`RUST_MIN_STACK`, else Rust's 2 MiB);
///   `max_workers_count`: the blocking pool's most threads (512); `os_quantum`: the Linux
///   scheduler's time slice in ms when Linux tells it, else SQLOS's 4.
/// - `os_priority_class`: 128 (high) when the process runs at a negative nice value, else
///   32 (normal); `os_error_mode`: 0, Windows' error mode has no Linux counterpart.
/// - `deadlock_monitor_serial_number`: 0: tessera finds deadlocks as each lock wait
///   begins, with no monitor that runs in rounds.
/// - `affinity_type`: 1 MANUAL while 'affinity mask' runs with a value other than 0,
///   else 2 AUTO; `process_physical_affinity`: `{{0,mask}}`, processor group 0 and the
///   hexadecimal mask of `cpu_count`'s CPUs.
/// - `process_kernel_time_ms`, `process_user_time_ms`: the process's system and user CPU
///   time (`/proc/self/stat`, all threads, ended ones included, at 10 ms resolution).
/// - `time_source`: 0 QUERY_PERFORMANCE_COUNTER (the monotonic high-resolution clock);
///   `virtual_machine_type`: 1 HYPERVISOR when the CPU flags say a hypervisor runs the
///   machine, else 0 NONE; `softnuma_configuration`: 0 OFF; `sql_memory_model`: 1
///   CONVENTIONAL (the pool's memory is ordinary pageable memory).
/// - `container_type`, `container_type_desc` (SQL Server 2019's last columns): 0 NONE:
///   tessera does not look at what contains its process.
pub(super) static OS_SYS_INFO: ViewDef<37> = ViewDef {
    schema: "sys",
    name: "dm_os_sys_info",
    columns: [
        col("cpu_ticks", BigInt, false),
        col("ms_ticks", BigInt, false),
        col("cpu_count", Int, false),
        col("hyperthread_ratio", Int, false),
        col("physical_memory_kb", BigInt, false),
        col("virtual_memory_kb", BigInt, false),
        col("committed_kb", Int, false),
        col("committed_target_kb", Int, false),
        col("visible_target_kb", Int, false),
        col("stack_size_in_bytes", Int, false),
        col("os_quantum", BigInt, false),
        col("os_error_mode", Int, false),
        col("os_priority_class", Int, true),
        col("max_workers_count", Int, false),
        col("scheduler_count", Int, false),
        col("scheduler_total_count", Int, false),
        col("deadlock_monitor_serial_number", Int, false),
        col("sqlserver_start_time_ms_ticks", BigInt, false),
        col("sqlserver_start_time", DateTime, false),
        col("affinity_type", Int, false),
        col("affinity_type_desc", VarChar(60), false),
        col("process_kernel_time_ms", BigInt, false),
        col("process_user_time_ms", BigInt, false),
        col("time_source", Int, false),
        col("time_source_desc", NVarChar(60), false),
        col("virtual_machine_type", Int, false),
        col("virtual_machine_type_desc", NVarChar(60), false),
        col("softnuma_configuration", Int, false),
        col("softnuma_configuration_desc", NVarChar(60), false),
        col("process_physical_affinity", NVarChar(3072), false),
        col("sql_memory_model", Int, false),
        col("sql_memory_model_desc", NVarChar(120), false),
        col("socket_count", Int, false),
        col("cores_per_socket", Int, false),
        col("numa_node_count", Int, false),
        col("container_type", Int, false),
        col("container_type_desc", NVarChar(60), false),
    ],
    rows: os_sys_info,
};

fn os_sys_info(ctx: &ExecCtx, _db: &str) -> Rows<37> {
    super::server_state(ctx)?;
    let now = tessera_io::clock::coarse_monotonic();
    let cpus = Cpus::now();
    let topology = Topology::read();
    let engine = &ctx.shared.engine;
    let memory = engine.memory_status();
    let pool = engine.stats().pool;
    let log_buffers = engine.log_buffer_stats();
    let committed = pool.resident_pages * tessera_database::PAGE_SIZE as u64
        + (log_buffers.lent_bytes + log_buffers.spare_bytes) as u64;
    let system = tessera_database::memory::system_memory();
    let stat = ProcessStat::read();
    let (started_wall, started_ticks) = ctx.shared.started_at;
    let started_ms = started_wall
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let local_ms = started_ms + i64::from(ctx.session.functions.utc_offset_minutes) * 60_000;
    let kb = |bytes: u64| i64::try_from(bytes >> 10).unwrap_or(i64::MAX);
    let kb_int = |bytes: u64| int(kb(bytes).min(i64::from(i32::MAX)));
    let quantum_us = quantum_us();
    let manual = ctx.shared.config.run_value("affinity mask").is_some_and(|m| m != 0);
    let hypervisor = hypervisor();
    Ok(vec![[
        int(i64::try_from(now.as_nanos()).unwrap_or(i64::MAX)),
        int(millis(now)),
        count(cpus.online.len()),
        count(topology.logical_per_socket()),
        int(kb(system.total)),
        int(kb(ADDRESS_SPACE_BYTES)),
        kb_int(committed),
        kb_int(memory.target_bytes),
        kb_int(memory.target_bytes),
        int(stack_bytes()),
        int((quantum_us + 999) / 1000),
        int(0),
        int(if stat.nice < 0 { 128 } else { 32 }),
        int(MAX_WORKERS),
        count(cpus.online.len()),
        count(cpus.online.len() + cpus.offline.len()),
        int(0),
        int(millis(started_ticks)),
        super::requests::datetime_ms(local_ms),
        int(if manual { 1 } else { 2 }),
        s(if manual { "MANUAL" } else { "AUTO" }),
        int(i64::try_from(stat.system_ticks * 1000 / USER_HZ).unwrap_or(i64::MAX)),
        int(i64::try_from(stat.user_ticks * 1000 / USER_HZ).unwrap_or(i64::MAX)),
        int(0),
        s("QUERY_PERFORMANCE_COUNTER"),
        int(if hypervisor { 1 } else { 0 }),
        s(if hypervisor { "HYPERVISOR" } else { "NONE" }),
        int(0),
        s("OFF"),
        s(&format!("{{{{0,{}}}}}", hex_mask(&cpus.online))),
        int(1),
        s("CONVENTIONAL"),
        count(topology.sockets),
        count(topology.cores_per_socket()),
        count(topology.numa_nodes),
        int(0),
        s("NONE"),
    ]])
}

/// `sys.dm_os_schedulers`: one VISIBLE ONLINE scheduler per CPU the process may run on
/// (`scheduler_id` 0 to n-1 in CPU order, `cpu_id` the CPU's number), then one VISIBLE
/// OFFLINE per CPU the process was started on that sp_configure 'affinity mask' leaves
/// out. Needs VIEW SERVER STATE.
///
/// tessera's schedulers are Linux's run queues, and its workers are the process's
/// threads. Each thread counts on the scheduler of the CPU it last ran on (field 39 of
/// `/proc/self/task/*/stat`), so its figures move when Linux migrates it; and the
/// counters of a thread that ended leave with it (they are the live threads' sums):
/// - `current_workers_count`: the threads last on the CPU; `active_workers_count`: those
///   running, runnable or in an uninterruptible (I/O) sleep (state R or D);
///   `runnable_tasks_count`: those running or runnable (state R) less the one running
///   (Linux does not tell which one it is); `is_idle`: none running or runnable;
///   `active_worker_address`: the OS thread id (8 bytes, big-endian) of a thread running
///   or runnable there (the reading thread when it is one), NULL when idle.
/// - `context_switches_count`: the threads' voluntary and involuntary context switches;
///   `idle_switches_count`: the voluntary ones (a thread that went to sleep waiting for
///   an event); `yield_count`: the involuntary ones (a thread the kernel preempted at the
///   end of its slice); `preemptive_switches_count`: 0 (every tessera thread is an OS
///   thread that Linux preempts; none switches mode).
/// - `total_cpu_usage_ms`: the threads' CPU time; `total_scheduler_delay_ms`: the time
///   they waited, runnable, on a run queue (`/proc/self/task/*/schedstat`; 0 where the
///   kernel keeps no scheduler statistics); `total_cpu_idle_capped_ms`: 0 (SQL Server's
///   value outside Azure).
/// - `current_tasks_count` and `load_factor`: the requests running (a running request
///   is one task). tessera does not record which thread serves a request, so the
///   reading session's own request counts on the CPU its thread runs on, and every other
///   session's running request on scheduler `session_id` modulo the number of online
///   schedulers. `work_queue_count`: those of them waiting for a turn to run
///   (TESSERA_REQUEST_TURN: their database's or workload group's limit); and
///   `pending_disk_io_count`: those waiting for a page read or a log flush (PAGEIOLATCH_SH,
///   WRITELOG), both spread the same way.
/// - `parent_node_id`: the CPU's NUMA node (0 when Linux shows none);
///   `quantum_length_us`: the Linux scheduler's time slice when Linux tells it, else
///   SQLOS's 4 ms; `ideal_workers_limit`: the blocking pool's most threads (512) shared
///   among the online schedulers; `last_timer_activity`: `cpu_ticks` now (the kernel's
///   scheduler ticks every CPU constantly); `failed_to_create_worker`: 0.
/// - `scheduler_address`, `memory_object_address`, `task_memory_object_address`: tessera
///   has no such objects: stand-in values, unique for each scheduler and column and the
///   same at every read, so that joins on them hold.
pub(super) static OS_SCHEDULERS: ViewDef<28> = ViewDef {
    schema: "sys",
    name: "dm_os_schedulers",
    columns: [
        col("scheduler_address", VarBinary(8), false),
        col("parent_node_id", Int, false),
        col("scheduler_id", Int, false),
        col("cpu_id", SmallInt, false),
        col("status", NVarChar(60), false),
        col("is_online", Bit, false),
        col("is_idle", Bit, false),
        col("preemptive_switches_count", Int, false),
        col("context_switches_count", Int, false),
        col("idle_switches_count", Int, false),
        col("current_tasks_count", Int, false),
        col("runnable_tasks_count", Int, false),
        col("current_workers_count", Int, false),
        col("active_workers_count", Int, false),
        col("work_queue_count", BigInt, false),
        col("pending_disk_io_count", Int, false),
        col("load_factor", Int, false),
        col("yield_count", Int, false),
        col("last_timer_activity", BigInt, false),
        col("failed_to_create_worker", Bit, true),
        col("active_worker_address", VarBinary(8), true),
        col("memory_object_address", VarBinary(8), false),
        col("task_memory_object_address", VarBinary(8), false),
        col("quantum_length_us", BigInt, false),
        col("total_cpu_usage_ms", BigInt, false),
        col("total_cpu_idle_capped_ms", BigInt, true),
        col("total_scheduler_delay_ms", BigInt, false),
        col("ideal_workers_limit", Int, false),
    ],
    rows: os_schedulers,
};

fn os_schedulers(ctx: &ExecCtx, _db: &str) -> Rows<28> {
    super::server_state(ctx)?;
    let ticks = int(i64::try_from(tessera_io::clock::coarse_monotonic().as_nanos()).unwrap_or(i64::MAX));
    let cpus = Cpus::now();
    let me = own_thread();
    let mut loads: BTreeMap<usize, CpuLoad> = BTreeMap::new();
    for t in threads() {
        loads.entry(t.cpu).or_default().add(&t, me.as_ref().is_some_and(|m| m.tid == t.tid));
    }
    let tasks = tasks(ctx, &cpus.online, me.as_ref().map(|m| m.cpu));
    let quantum_us = quantum_us();
    let online = i64::try_from(cpus.online.len()).unwrap_or(i64::MAX).max(1);
    let schedulers = cpus.online.iter().map(|&c| (c, true)).chain(cpus.offline.iter().map(|&c| (c, false)));
    Ok(schedulers
        .enumerate()
        .map(|(id, (cpu, is_online))| {
            let load = loads.get(&cpu).map_or_else(CpuLoad::default, CpuLoad::clone);
            let task = tasks.get(&cpu).copied().unwrap_or_default();
            let status = if is_online { "VISIBLE ONLINE" } else { "VISIBLE OFFLINE" };
            [
                address(1, id),
                int(numa_node(cpu)),
                count(id),
                count(cpu),
                s(status),
                bit(is_online),
                bit(load.running == 0),
                int(0),
                clamp(load.voluntary + load.involuntary),
                clamp(load.voluntary),
                clamp(task.running),
                clamp(load.running.saturating_sub(1)),
                clamp(load.threads),
                clamp(load.running + load.io),
                int(i64::try_from(task.queued).unwrap_or(i64::MAX)),
                clamp(task.io),
                clamp(task.running),
                clamp(load.involuntary),
                ticks.clone(),
                bit(false),
                load.active.map_or(Value::Null, |tid| Value::Binary(Arc::from(&i64::from(tid).to_be_bytes()[..]))),
                address(2, id),
                address(3, id),
                int(quantum_us),
                int(millis(Duration::from_nanos(load.run_ns))),
                int(0),
                int(millis(Duration::from_nanos(load.delay_ns))),
                int(MAX_WORKERS / online),
            ]
        })
        .collect())
}

/// The CPUs the process may run on now (`online`), and those it was started on that
/// 'affinity mask' leaves out (`offline`).
struct Cpus {
    online: BTreeSet<usize>,
    offline: BTreeSet<usize>,
}

impl Cpus {
    fn now() -> Cpus {
        let allowed = tessera_io::affinity::allowed_cpus();
        // Every thread runs on the mask's CPUs (the calling one as every other).
        let online = tessera_io::affinity::thread_cpus(0).unwrap_or_else(|_| allowed.clone());
        let offline = allowed.difference(&online).copied().collect();
        Cpus { online, offline }
    }
}

/// One thread of the process, as `/proc/self/task/<tid>` tells.
struct Thread {
    tid: i32,
    /// R running or runnable, S sleeping, D in an uninterruptible sleep (I/O), …
    state: char,
    /// The CPU it last ran on.
    cpu: usize,
    run_ns: u64,
    /// Time it waited on a run queue, runnable.
    delay_ns: u64,
    voluntary: u64,
    involuntary: u64,
}

/// The fields of a `stat` file after the command name (field 3, the state, is the first).
fn stat_fields(text: &str) -> Vec<&str> {
    text.rsplit_once(')').map_or(Vec::new(), |(_, rest)| rest.split_whitespace().collect())
}

/// `stat` field `n` (1-based, as proc(5) numbers them) from [`stat_fields`].
fn field(fields: &[&str], n: usize) -> u64 {
    fields.get(n - 3).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// `/proc/…/status`'s `key:  N` as a number.
fn status_field(text: &str, key: &str) -> u64 {
    text.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

/// The thread whose directory is `dir` (`/proc/self/task/<tid>` or `/proc/thread-self`),
/// if it still runs.
fn thread_at(dir: &std::path::Path, tid: i32) -> Option<Thread> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let fields = stat_fields(&stat);
    let state = fields.first()?.chars().next()?;
    let cpu = usize::try_from(field(&fields, 39)).ok()?;
    let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
    let schedstat = std::fs::read_to_string(dir.join("schedstat")).unwrap_or_default();
    let mut sched = schedstat.split_whitespace().map(|v| v.parse::<u64>().ok());
    // Without scheduler statistics, the CPU time from `stat` (10 ms ticks).
    let cpu_ns = (field(&fields, 14) + field(&fields, 15)) * (1_000_000_000 / USER_HZ);
    let run_ns = sched.next().flatten().unwrap_or(cpu_ns);
    let delay_ns = sched.next().flatten().unwrap_or(0);
    Some(Thread {
        tid,
        state,
        cpu,
        run_ns,
        delay_ns,
        voluntary: status_field(&status, "voluntary_ctxt_switches"),
        involuntary: status_field(&status, "nonvoluntary_ctxt_switches"),
    })
}

/// The process's threads now (those that end while they are read are left out).
fn threads() -> Vec<Thread> {
    let Ok(tids) = tessera_io::affinity::process_threads() else { return Vec::new() };
    tids.into_iter()
        .filter_map(|tid| thread_at(&std::path::Path::new("/proc/self/task").join(tid.to_string()), tid))
        .collect()
}

/// The calling thread (its id is the first field of its own `stat`).
fn own_thread() -> Option<Thread> {
    let dir = std::path::Path::new("/proc/thread-self");
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let tid = stat.split_whitespace().next()?.parse().ok()?;
    thread_at(dir, tid)
}

/// The threads last on one CPU, added up.
#[derive(Clone, Default)]
struct CpuLoad {
    threads: u64,
    /// Running or runnable (R).
    running: u64,
    /// In an uninterruptible sleep (D).
    io: u64,
    voluntary: u64,
    involuntary: u64,
    run_ns: u64,
    delay_ns: u64,
    /// A thread running or runnable there (the calling one, if it is).
    active: Option<i32>,
}

impl CpuLoad {
    fn add(&mut self, t: &Thread, mine: bool) {
        self.threads += 1;
        match t.state {
            'R' => {
                self.running += 1;
                if mine || self.active.is_none() {
                    self.active = Some(t.tid);
                }
            }
            'D' => self.io += 1,
            _ => {}
        }
        self.voluntary += t.voluntary;
        self.involuntary += t.involuntary;
        self.run_ns += t.run_ns;
        self.delay_ns += t.delay_ns;
    }
}

/// The running requests counted on one scheduler.
#[derive(Clone, Copy, Default)]
struct Tasks {
    running: u64,
    /// Waiting for a turn to run.
    queued: u64,
    /// Waiting for a page read or a log flush.
    io: u64,
}

/// The running requests by the CPU of the scheduler they count on: the caller's own on
/// `own_cpu`, every other session's on the online CPU at `session_id` modulo their number.
fn tasks(ctx: &ExecCtx, online: &BTreeSet<usize>, own_cpu: Option<usize>) -> BTreeMap<usize, Tasks> {
    let online: Vec<usize> = online.iter().copied().collect();
    let mut out: BTreeMap<usize, Tasks> = BTreeMap::new();
    if online.is_empty() {
        return out;
    }
    for info in super::dmv::sessions(ctx) {
        if !info.activity.lock().running {
            continue;
        }
        let spid = info.spid;
        let cpu = match own_cpu.filter(|c| spid == ctx.session.spid && online.contains(c)) {
            Some(c) => c,
            None => online[usize::try_from(spid).unwrap_or(0) % online.len()],
        };
        let t = out.entry(cpu).or_default();
        t.running += 1;
        match info.waits.current().map(|w| w.kind) {
            Some(WaitType::RequestTurn) => t.queued += 1,
            Some(WaitType::PageIoShared | WaitType::WriteLog) => t.io += 1,
            _ => {}
        }
    }
    out
}

/// The machine's CPU topology (`/sys/devices/system`).
struct Topology {
    /// Logical CPUs online.
    logical: usize,
    sockets: usize,
    /// Physical cores (package, core) online.
    cores: usize,
    numa_nodes: usize,
}

impl Topology {
    fn read() -> Topology {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .map(|l| cpu_list(&l))
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| tessera_io::affinity::allowed_cpus().clone());
        let read = |cpu: usize, what: &str| {
            std::fs::read_to_string(format!("/sys/devices/system/cpu/cpu{cpu}/topology/{what}"))
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
        };
        let mut packages = BTreeSet::new();
        let mut cores = BTreeSet::new();
        for &cpu in &online {
            // A CPU whose topology is unknown counts as a core of its own.
            let package = read(cpu, "physical_package_id").unwrap_or(0);
            let core = read(cpu, "core_id").unwrap_or(-1 - cpu as i64);
            packages.insert(package);
            cores.insert((package, core));
        }
        let numa_nodes = std::fs::read_dir("/sys/devices/system/node").map_or(0, |d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_str().and_then(|n| n.strip_prefix("node")).is_some_and(is_number))
                .count()
        });
        Topology {
            logical: online.len(),
            sockets: packages.len().max(1),
            cores: cores.len(),
            numa_nodes: numa_nodes.max(1),
        }
    }

    fn logical_per_socket(&self) -> usize {
        self.logical / self.sockets
    }

    fn cores_per_socket(&self) -> usize {
        self.cores / self.sockets
    }
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// The CPUs of a Linux CPU list (`0-3,8,10-11`).
fn cpu_list(text: &str) -> BTreeSet<usize> {
    let mut out = BTreeSet::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        let (from, to) = part.split_once('-').unwrap_or((part, part));
        if let (Ok(from), Ok(to)) = (from.trim().parse::<usize>(), to.trim().parse::<usize>()) {
            out.extend(from..=to);
        }
    }
    out
}

/// The NUMA node of `cpu` (its `nodeN` entry in sysfs; 0 when it has none).
fn numa_node(cpu: usize) -> i64 {
    std::fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}"))
        .ok()
        .and_then(|d| {
            d.filter_map(|e| e.ok()).find_map(|e| e.file_name().to_str()?.strip_prefix("node")?.parse::<i64>().ok())
        })
        .unwrap_or(0)
}

/// The process's figures from `/proc/self/stat`: CPU time in clock ticks, nice value.
struct ProcessStat {
    user_ticks: u64,
    system_ticks: u64,
    nice: i64,
}

impl ProcessStat {
    fn read() -> ProcessStat {
        let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
        let fields = stat_fields(&text);
        ProcessStat {
            user_ticks: field(&fields, 14),
            system_ticks: field(&fields, 15),
            nice: fields.get(19 - 3).and_then(|v| v.parse().ok()).unwrap_or(0),
        }
    }
}

/// The Linux scheduler's time slice in microseconds (EEVDF's base slice, or CFS's least
/// granularity, whichever the kernel shows), else SQLOS's quantum.
fn quantum_us() -> i64 {
    ["/sys/kernel/debug/sched/base_slice_ns", "/proc/sys/kernel/sched_min_granularity_ns"]
        .iter()
        .find_map(|p| std::fs::read_to_string(p).ok()?.trim().parse::<i64>().ok())
        .filter(|&ns| ns > 0)
        .map_or(SQLOS_QUANTUM_US, |ns| (ns / 1000).max(1))
}

/// A thread's stack, as Rust sizes the threads it makes.
fn stack_bytes() -> i64 {
    std::env::var("RUST_MIN_STACK")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .map_or(DEFAULT_STACK_BYTES, |b| i64::from(b).min(i64::from(i32::MAX)))
}

/// Whether a hypervisor runs the machine (the `hypervisor` CPU flag).
fn hypervisor() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|t| {
        t.lines().filter(|l| l.starts_with("flags")).take(1).any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
    })
}

/// The hexadecimal mask of a set of CPUs (bit n: CPU n).
fn hex_mask(cpus: &BTreeSet<usize>) -> String {
    let Some(&top) = cpus.last() else { return "0".to_string() };
    // Four CPUs a digit, the highest first.
    (0..=top / 4)
        .rev()
        .map(|d| {
            let nibble = (0..4).filter(|b| cpus.contains(&(d * 4 + b))).fold(0u32, |n, b| n | 1 << b);
            char::from_digit(nibble, 16).unwrap_or('0')
        })
        .collect()
}

/// A stand-in address: `kind` (1 scheduler, 2 its memory object, 3 its tasks' memory
/// object) and the scheduler's id, 8 bytes.
fn address(kind: u8, scheduler: usize) -> Value {
    let mut bytes = [0u8; 8];
    bytes[3] = kind;
    bytes[4..].copy_from_slice(&u32::try_from(scheduler).unwrap_or(u32::MAX).to_be_bytes());
    Value::Binary(Arc::from(&bytes[..]))
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn count(n: usize) -> Value {
    int(i64::try_from(n).unwrap_or(i64::MAX))
}

/// A counter in an `int` column (it stops at int's largest).
fn clamp(n: u64) -> Value {
    int(i64::try_from(n).unwrap_or(i64::MAX).min(i64::from(i32::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_and_masks() {
        assert_eq!(cpu_list("0-3,8,10-11\n"), [0, 1, 2, 3, 8, 10, 11].into());
        assert_eq!(cpu_list(""), BTreeSet::new());
        assert_eq!(hex_mask(&[0, 1, 2, 3].into()), "f");
        assert_eq!(hex_mask(&[0, 4, 9].into()), "211");
        assert_eq!(hex_mask(&BTreeSet::new()), "0");
    }

    #[test]
    fn the_calling_thread_is_among_the_process_s_threads() {
        let me = own_thread().expect("/proc/thread-self");
        assert_eq!(me.state, 'R', "it is running");
        let all = threads();
        assert!(all.iter().any(|t| t.tid == me.tid), "{} among {}", me.tid, all.len());
        assert!(tessera_io::affinity::allowed_cpus().contains(&me.cpu));
    }

    #[test]
    fn stat_fields_count_from_the_state() {
        let text = "42 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 0 18";
        let fields = stat_fields(text);
        assert_eq!(fields[0], "R");
        assert_eq!(field(&fields, 14), 11);
        assert_eq!(field(&fields, 15), 12);
        assert_eq!(field(&fields, 39), 0, "missing fields read as 0");
    }
}
