// SPDX-License-Identifier: Apache-2.0
// Threads that keep thread_local! values across sleeps, yields and lock waits,
// with destructors that run when each thread ends; a Mutex+Condvar queue, an
// mpsc channel, a Barrier, an RwLock, park/unpark and scoped threads: the
// parts of Rust's std that wait on futexes of their own.
use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier, Condvar, Mutex, RwLock};
use std::thread;
use std::time::Duration;

static DROPPED: AtomicUsize = AtomicUsize::new(0);

struct Noted(usize);
impl Drop for Noted {
    fn drop(&mut self) {
        DROPPED.fetch_add(self.0, Ordering::SeqCst);
    }
}

thread_local! {
    static COUNTER: Cell<u64> = Cell::new(0);
    static NOTE: RefCell<Option<Noted>> = RefCell::new(None);
}

fn main() {
    // thread_local! values stay each thread's own across sleeps and yields.
    let barrier = Arc::new(Barrier::new(4));
    let handles: Vec<_> = (0..4u64)
        .map(|i| {
            let b = Arc::clone(&barrier);
            thread::spawn(move || {
                NOTE.with(|n| *n.borrow_mut() = Some(Noted(i as usize + 1)));
                for k in 0..1000u64 {
                    COUNTER.with(|c| c.set(c.get() + i + 1));
                    if k % 100 == 0 {
                        thread::sleep(Duration::from_millis(1));
                    } else if k % 10 == 0 {
                        thread::yield_now();
                    }
                }
                b.wait();
                COUNTER.with(|c| c.get())
            })
        })
        .collect();
    let sums: Vec<u64> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    println!("thread_local sums: {:?}", sums);
    println!("destructors ran for: {}", DROPPED.load(Ordering::SeqCst));

    // A Mutex+Condvar queue: one producer, two consumers.
    let queue = Arc::new((Mutex::new((Vec::<u32>::new(), false)), Condvar::new()));
    let consumers: Vec<_> = (0..2)
        .map(|_| {
            let q = Arc::clone(&queue);
            thread::spawn(move || {
                let (lock, cv) = &*q;
                let mut taken = 0u64;
                loop {
                    let mut g = lock.lock().unwrap();
                    while g.0.is_empty() && !g.1 {
                        g = cv.wait(g).unwrap();
                    }
                    match g.0.pop() {
                        Some(v) => taken += v as u64,
                        None => return taken,
                    }
                }
            })
        })
        .collect();
    {
        let (lock, cv) = &*queue;
        for v in 1..=10000u32 {
            lock.lock().unwrap().0.push(v);
            cv.notify_one();
        }
        lock.lock().unwrap().1 = true;
        cv.notify_all();
    }
    let total: u64 = consumers.into_iter().map(|h| h.join().unwrap()).sum();
    println!("queue total: {}", total);

    // A channel, a RwLock and park/unpark.
    let (tx, rx) = mpsc::channel();
    let table = Arc::new(RwLock::new(0u64));
    let senders: Vec<_> = (0..3u64)
        .map(|i| {
            let tx = tx.clone();
            let t = Arc::clone(&table);
            thread::spawn(move || {
                for k in 0..500u64 {
                    *t.write().unwrap() += 1;
                    let _ = *t.read().unwrap();
                    tx.send(i * 1000 + k).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    let received: u64 = rx.iter().sum();
    for s in senders {
        s.join().unwrap();
    }
    println!("channel sum: {}, rwlock count: {}", received, *table.read().unwrap());

    let parked = thread::spawn(|| {
        thread::park();
        "unparked"
    });
    thread::sleep(Duration::from_millis(20));
    parked.thread().unpark();
    println!("park: {}", parked.join().unwrap());

    let mut parts = [0u64; 4];
    thread::scope(|s| {
        for (i, p) in parts.iter_mut().enumerate() {
            s.spawn(move || *p = (0..=(i as u64 + 1) * 1000).sum());
        }
    });
    println!("scoped: {:?}", parts);
}
