//! The machine manager's side of the connections: the accepting thread
//! and one reader thread per node manager, which answers clock probes at
//! once and hands every other message to the manager's loop.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Event, Link, HELLO_TIMEOUT, MAX_NODES};
use crate::cluster::auth::Authenticator;
use crate::cluster::wire::{self, Msg, PeerPolicy, Role};
use crate::sys;

/// Accepts node managers; each connection gets a reader thread that
/// answers clock probes at once (so their delay holds no queueing) and
/// hands everything else to the manager's loop.
pub(super) fn accept(
    listener: TcpListener,
    auth: Arc<dyn Authenticator>,
    peer: PeerPolicy,
    welcome: (String, u64),
    tx: Sender<Event>,
    stop: Arc<AtomicBool>,
) {
    let mut next_conn = 0u64;
    let live = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::Acquire) {
        let stream = match listener.accept() {
            Ok((s, _)) => s,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        // Bounded: a flood of connections costs threads only up to here.
        if live.load(Ordering::Acquire) >= MAX_NODES + 16 {
            drop(stream);
            continue;
        }
        next_conn += 1;
        let (conn, auth, tx, welcome, held) = (
            next_conn,
            Arc::clone(&auth),
            tx.clone(),
            welcome.clone(),
            Arc::clone(&live),
        );
        live.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name(format!("keel-mm-conn-{conn}"))
            .spawn(move || {
                serve_node(conn, stream, auth, peer, welcome, &tx);
                held.fetch_sub(1, Ordering::AcqRel);
            });
        if spawned.is_err() {
            live.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn serve_node(
    conn: u64,
    stream: TcpStream,
    auth: Arc<dyn Authenticator>,
    peer: PeerPolicy,
    (policy, slot_ns): (String, u64),
    tx: &Sender<Event>,
) {
    let _ = stream.set_nonblocking(false);
    let Ok((mut ctx, mut crx)) = wire::handshake(stream, Role::Mm, auth, peer, HELLO_TIMEOUT)
    else {
        return;
    };
    let hello = match crx.recv(Some(HELLO_TIMEOUT)) {
        Ok(Some(Msg::Hello { node, pes, boot_id })) => (node, pes, boot_id),
        _ => {
            let _ = ctx.send(&Msg::Refused {
                reason: "the first message must be hello".into(),
            });
            ctx.shutdown();
            return;
        }
    };
    let _ = ctx.send(&Msg::Welcome {
        node_index: 0,
        policy,
        slot_ns,
    });
    let link: Link = Arc::new(Mutex::new(ctx));
    let (node, pes, boot_id) = hello;
    if tx
        .send(Event::Joined {
            conn,
            node,
            pes,
            boot_id,
            link: Arc::clone(&link),
        })
        .is_err()
    {
        return;
    }
    let why = loop {
        match crx.recv(None) {
            Ok(Some(Msg::Ping { id, sent_ns })) => {
                let received_ns = sys::monotonic_ns();
                let Ok(mut l) = link.lock() else {
                    break "link poisoned".to_string();
                };
                let pong = Msg::Pong {
                    id,
                    ping_sent_ns: sent_ns,
                    received_ns,
                    sent_ns: sys::monotonic_ns(),
                };
                if let Err(e) = l.send(&pong) {
                    break e.to_string();
                }
            }
            Ok(Some(m)) => {
                if tx.send(Event::Msg(conn, m)).is_err() {
                    break "the manager stopped".into();
                }
            }
            Ok(None) => {}
            Err(e) => break e.to_string(),
        }
    };
    if let Ok(l) = link.lock() {
        l.shutdown();
    }
    let _ = tx.send(Event::Left(conn, why));
}
