use super::*;

fn temp_page(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join(name);
    (dir, p)
}

#[test]
fn create_then_open_sees_the_same_fields() {
    let (_d, p) = temp_page("pg");
    let nm = Page::create(&p, None).unwrap();
    let proc_side = Page::open(&p).unwrap();
    assert_eq!(
        proc_side.wait_mode(),
        PageWaitMode::SpinBlock {
            spin_ns: DEFAULT_SPIN_NS
        }
    );
    nm.set_wait_mode(PageWaitMode::Poll);
    assert_eq!(proc_side.wait_mode(), PageWaitMode::Poll);
    nm.set_wait_mode(PageWaitMode::SpinBlock { spin_ns: 7 });
    assert_eq!(
        proc_side.wait_mode(),
        PageWaitMode::SpinBlock { spin_ns: 7 }
    );
    let c = Counters {
        comm_count: 3,
        comm_wait_ns: 4,
        spin_ns_total: 5,
        cpu_ns: 6,
        updates: 1,
    };
    proc_side.publish(&c);
    assert_eq!(nm.counters().unwrap(), c);
    assert_eq!(nm.layout().seq.load(Ordering::Relaxed), 2);
    let meta = std::fs::metadata(&p).unwrap();
    assert_eq!(meta.len(), PAGE_SIZE as u64);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    drop(proc_side);
    drop(nm);
    assert!(!p.exists(), "the creator unlinks the page");
}

#[test]
fn raw_offsets_match_the_contract() {
    let (_d, p) = temp_page("raw");
    let nm = Page::create(&p, None).unwrap();
    nm.set_pid(4242);
    nm.layout().updates.store(9, Ordering::Relaxed);
    let bytes = std::fs::read(&p).unwrap();
    let u64_at = |o: usize| u64::from_ne_bytes(bytes[o..o + 8].try_into().unwrap());
    let u32_at = |o: usize| u32::from_ne_bytes(bytes[o..o + 4].try_into().unwrap());
    assert_eq!(u64_at(0), MAGIC);
    assert_eq!(&bytes[0..8], &MAGIC.to_ne_bytes());
    assert_eq!(u32_at(8), 1);
    assert_eq!(u32_at(12), 1);
    assert_eq!(u64_at(16), 100_000);
    assert_eq!(u64_at(64), 9);
    assert_eq!(u64_at(72), 4242);
}

#[test]
fn open_rejects_foreign_files() {
    let (_d, p) = temp_page("bad");
    std::fs::write(&p, vec![0u8; PAGE_SIZE]).unwrap();
    assert!(matches!(Page::open(&p), Err(ShmError::Invalid { .. })));
    std::fs::write(&p, b"short").unwrap();
    let e = Page::open(&p).unwrap_err();
    assert!(e.to_string().contains("5 bytes"), "{e}");
}

#[test]
fn create_never_follows_a_planted_symlink_or_opens_a_fifo() {
    let (d, p) = temp_page("planted");
    let target = d.path().join("precious");
    std::fs::write(&target, b"do not truncate").unwrap();
    std::os::unix::fs::symlink(&target, &p).unwrap();
    let e = Page::create(&p, None).unwrap_err();
    assert!(matches!(e, ShmError::Invalid { .. }), "{e}");
    assert!(e.to_string().contains("not a regular file"), "{e}");
    assert_eq!(std::fs::read(&target).unwrap(), b"do not truncate");
    assert!(std::fs::symlink_metadata(&p).unwrap().is_symlink());
    // A FIFO would block an open without O_NONBLOCK: refused at once.
    let fifo = d.path().join("fifo");
    let c = sys::cpath(&fifo).unwrap();
    // SAFETY: `c` is a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(matches!(
        Page::create(&fifo, None),
        Err(ShmError::Invalid { .. })
    ));
    // A leftover regular page of ours is still replaced.
    let old = d.path().join("old");
    std::fs::write(&old, vec![0u8; PAGE_SIZE]).unwrap();
    assert!(Page::create(&old, None).is_ok());
}

#[test]
fn a_writer_stuck_mid_update_makes_reads_fail_not_hang() {
    let (_d, p) = temp_page("torn");
    let nm = Page::create(&p, None).unwrap();
    nm.layout().seq.store(7, Ordering::Relaxed);
    assert!(matches!(nm.counters(), Err(ShmError::Torn { .. })));
    // The writer recovers: publishing rounds the odd word up.
    nm.publish(&Counters::default());
    assert_eq!(nm.layout().seq.load(Ordering::Relaxed) & 1, 0);
    assert!(nm.counters().is_ok());
}

#[test]
fn stale_pages_are_replaced_but_live_ones_are_not() {
    let (_d, p) = temp_page("stale");
    let mut first = Page::create(&p, None).unwrap();
    first.keep_file();
    first.set_pid(i32::MAX as u32 - 1); // almost surely no such process
    drop(first);
    let second = Page::create(&p, None).unwrap();
    second.set_pid(std::process::id());
    let e = Page::create(&p, None).unwrap_err();
    assert!(matches!(e, ShmError::InUse { .. }), "{e}");
}

#[test]
fn concurrent_reads_never_see_a_torn_snapshot() {
    let (_d, p) = temp_page("race");
    let nm = Page::create(&p, None).unwrap();
    let writer = Page::open(&p).unwrap();
    let stop = std::sync::atomic::AtomicBool::new(false);
    /// Stops the writer when the reader is done, also when its
    /// assertion fails: the scope joins the writer before a panic
    /// propagates, so a writer left running would hang the test.
    struct StopOnDrop<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                i += 1;
                // Every field equal: a mixed snapshot is detectable.
                writer.publish(&Counters {
                    comm_count: i,
                    comm_wait_ns: i,
                    spin_ns_total: i,
                    cpu_ns: i,
                    updates: i,
                });
                // Back to back, but with a gap a reader can land in,
                // as a job's heartbeat leaves: a writer that never
                // pauses may keep a reader retrying until it gives up
                // (`ShmError::Torn`, by design).
                for _ in 0..64 {
                    std::hint::spin_loop();
                }
            }
        });
        let _stop = StopOnDrop(&stop);
        let mut consistent = 0u32;
        for _ in 0..20_000 {
            match nm.counters() {
                Ok(c) => {
                    assert!(
                        c.comm_count == c.comm_wait_ns
                            && c.comm_count == c.spin_ns_total
                            && c.comm_count == c.cpu_ns
                            && c.comm_count == c.updates,
                        "torn snapshot {c:?}"
                    );
                    consistent += 1;
                }
                // Bounded retries exhausted: refused, never mixed.
                Err(ShmError::Torn { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(consistent > 0, "no consistent snapshot in 20,000 reads");
    });
}

#[test]
fn since_subtracts_a_baseline() {
    let a = Counters {
        comm_count: 10,
        comm_wait_ns: 100,
        spin_ns_total: 30,
        cpu_ns: 1000,
        updates: 12,
    };
    let b = Counters {
        comm_count: 4,
        comm_wait_ns: 40,
        spin_ns_total: 10,
        cpu_ns: 300,
        updates: 5,
    };
    let d = a.since(&b);
    assert_eq!(d.comm_count, 6);
    assert_eq!(d.compute_ns(), 700 - 20);
    assert_eq!(b.since(&a), Counters::default());
}
