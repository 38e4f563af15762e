//! The scheduling policy of the threads a library spawns for us (timely's network threads),
//! set by the policy they inherit from the thread that creates them.

/// The calling thread made SCHED_BATCH for as long as this lives, so that the threads it spawns
/// meanwhile are born SCHED_BATCH (Linux gives a new thread its creator's policy); dropping it
/// gives the caller its previous policy back.
///
/// Why SCHED_BATCH for timely's network threads: they sleep until a message is to be sent or has
/// arrived, and a normal thread woken while both cores run workers preempts one of them at once.
/// With two processes on two cores that was ~4,000 preemptions a second per process (and as many
/// wake-ups), ~0.15 CPU-s of a 1.2 s run in the kernel's switching. A SCHED_BATCH thread woken
/// then waits for the tick's next decision (a few ms at most): messages go in fewer, larger sends
/// and reads, and the workers keep their cores. Inheritance sets the policy without looking the
/// threads up by name, which they set only once running.
///
/// ```
/// # #[cfg(target_os = "linux")] {
/// use saams_jobs::spawn_policy::SpawnPolicy;
/// std::thread::spawn(|| {
///     let policy = || unsafe { libc::sched_getscheduler(0) };
///     let before = policy();
///     let guard = SpawnPolicy::batch().unwrap();
///     let child = std::thread::spawn(policy).join().unwrap();
///     drop(guard);
///     assert_eq!(child, libc::SCHED_BATCH);
///     assert_eq!(policy(), before); // the caller has its own back
///     assert_eq!(std::thread::spawn(policy).join().unwrap(), before);
/// }).join().unwrap();
/// # }
/// ```
pub struct SpawnPolicy {
    #[cfg(target_os = "linux")]
    previous: (libc::c_int, libc::sched_param),
    /// Not `Send`: dropping it on another thread would change that thread's policy.
    _on_this_thread: std::marker::PhantomData<*const ()>,
}

impl SpawnPolicy {
    /// Make the calling thread SCHED_BATCH until the result is dropped (no privilege is needed
    /// to move between the normal policies).
    ///
    /// # Errors
    /// When the system refuses the change (the caller keeps its policy), or off Linux.
    pub fn batch() -> Result<SpawnPolicy, String> {
        #[cfg(target_os = "linux")]
        {
            let mut param = libc::sched_param { sched_priority: 0 };
            // SAFETY: system calls on the calling thread (id 0), with a valid `sched_param`.
            let previous = unsafe { libc::sched_getscheduler(0) };
            if previous < 0 || unsafe { libc::sched_getparam(0, &mut param) } != 0 {
                return Err(format!("reading the scheduling policy: {}", std::io::Error::last_os_error()));
            }
            let batch = libc::sched_param { sched_priority: 0 };
            // SAFETY: as above.
            if unsafe { libc::sched_setscheduler(0, libc::SCHED_BATCH, &batch) } != 0 {
                return Err(format!("setting SCHED_BATCH: {}", std::io::Error::last_os_error()));
            }
            Ok(SpawnPolicy { previous: (previous, param), _on_this_thread: std::marker::PhantomData })
        }
        #[cfg(not(target_os = "linux"))]
        Err("SCHED_BATCH is Linux's".into())
    }
}

impl Drop for SpawnPolicy {
    fn drop(&mut self) {
        #[cfg(target_os = "linux")]
        {
            let (policy, param) = self.previous;
            // SAFETY: the calling thread's own policy, as read before. A refusal (said on
            // stderr) leaves the caller SCHED_BATCH, and the threads it spawns later: scheduled
            // as batch work, which changes no result.
            if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
                eprintln!("restoring the scheduling policy: {}", std::io::Error::last_os_error());
            }
        }
    }
}
