//! Process figures from `/proc`: CPU time, resident memory, open file descriptors, the CPU
//! time of PostgreSQL's server processes, and the calling thread's CPU time.

use std::time::Duration;

/// User plus system CPU time of process `pid` (`/proc/PID/stat`, clock ticks of 10 ms).
pub(crate) fn cpu(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    ticks(&stat)
}

fn ticks(stat: &str) -> Option<Duration> {
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    // USER_HZ is 100 on Linux.
    Some(Duration::from_millis((utime + stime) * 10))
}

/// CPU time of the calling thread, in nanoseconds (`/proc/thread-self/schedstat`).
pub(crate) fn thread_cpu() -> Duration {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .map(Duration::from_nanos)
        .unwrap_or_default()
}

/// A `kB` line of `/proc/PID/status` (`VmRSS`, `VmHWM`), in bytes.
pub(crate) fn status_bytes(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| {
        let v = l.strip_prefix(key)?.strip_prefix(':')?;
        let kb: u64 = v.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// Resets the peak resident size (`VmHWM`) of `pid` to its current size (`clear_refs` 5).
pub(crate) fn reset_peak(pid: u32) -> bool {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").is_ok()
}

/// Open file descriptors of `pid`.
pub(crate) fn fd_count(pid: u32) -> Option<usize> {
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count())
}

/// Open sockets of `pid` (descriptors whose link reads `socket:[inode]`): connections and
/// listeners, without the database files a pool opens as it grows.
pub(crate) fn socket_count(pid: u32) -> Option<usize> {
    let entries = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        entries
            .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
            .filter(|target| target.to_string_lossy().starts_with("socket:"))
            .count(),
    )
}

/// The uid of the `postgres` user (from `/etc/passwd`).
pub(crate) fn postgres_uid() -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next()? == "postgres").then_some(())?;
        f.nth(1)?.parse().ok()
    })
}

/// Summed CPU time of the live processes named `postgres` owned by `uid`: the PostgreSQL
/// server, its auxiliary processes (WAL writer, checkpointer, …) and the backends of database
/// `db` — not the backends of other databases (the server may be shared). Backends that exit
/// between two readings take their CPU time with them; the pools here keep theirs open.
pub(crate) fn postgres_cpu(uid: u32, db: &str) -> Duration {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Duration::ZERO;
    };
    let mut total = Duration::ZERO;
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(comm) = std::fs::read_to_string(format!("/proc/{pid}/comm")) else {
            continue;
        };
        if comm.trim_end() != "postgres" {
            continue;
        }
        let owner = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u32>().ok())
            });
        if owner != Some(uid) {
            continue;
        }
        // A backend's title is "postgres: USER DB HOST(PORT) STATE" or "… [local] …".
        let title = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let is_backend = title.contains('(') || title.contains("[local]");
        if is_backend && !title.split_whitespace().any(|w| w == db) {
            continue;
        }
        if let Some(c) = cpu(pid) {
            total += c;
        }
    }
    total
}
