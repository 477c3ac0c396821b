//! `keel_mpi_plan` (cargo feature `mpi`, header section `KEEL_MPI`): the
//! plan-only API across MPI ranks (`keel_mpi::plan`) for C, C++ and
//! Fortran MPI codes, in Zoltan's shape. Every rank of a communicator calls
//! it with its own objects; every rank gets its export and import lists.
//!
//! The communicator comes as its Fortran handle (`MPI_Comm_c2f(comm)` in
//! C), which has one type in every MPI, and is duplicated for the call, so
//! Keel's messages never mix with the program's. A rank whose arguments
//! are wrong (a NULL array, a bad spec) still takes part in the collective
//! call, and every rank returns the same status and message.

use std::ffi::{c_char, c_int};

use keel_mpi::{plan_in_tree, plan_or_refuse, LocalObject, MpiComm, PlanError, PlanRequest};
use mpi::ffi;
use mpi::raw::FromRaw;
use mpi::topology::SimpleCommunicator;

use crate::mapper::array;
use crate::result::lend;
use crate::status::{guard, keel_status, quietly, text, Failure};

/// One object that changes rank in a plan: an export (`rank` is its
/// destination) or an import (`rank` is where it comes from).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct keel_transfer {
    /// The object's global id.
    pub id: u64,
    /// The other rank.
    pub rank: i32,
    /// Its size, as its owner gave it (0 when not given).
    pub size: u64,
}

/// What a plan does to the whole job: the same on every rank.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct keel_mpi_metrics {
    /// λ = max / mean − 1 of the ranks' loads before the plan.
    pub lambda_before: f64,
    /// The same after it.
    pub lambda_after: f64,
    /// LIB in percent after the plan.
    pub lib_percent: f64,
    /// The most loaded rank's load after the plan.
    pub makespan: f64,
    /// Objects that change rank.
    pub migrations: u64,
    /// Σ size of those objects.
    pub bytes_moved: u64,
    /// Objects in the job.
    pub objects: u64,
}

/// A plan, owned by the library: free it with `keel_mpi_plan_free`.
pub struct keel_mpi_plan_result {
    destinations: Vec<i32>,
    exports: Vec<keel_transfer>,
    imports: Vec<keel_transfer>,
    metrics: keel_mpi_metrics,
}

fn rank_of(rank: usize) -> i32 {
    i32::try_from(rank).unwrap_or(i32::MAX)
}

fn failure(e: PlanError) -> Failure {
    let status = match &e {
        PlanError::Comm(_) | PlanError::Malformed { .. } => keel_status::KEEL_ERR_MPI,
        _ => keel_status::KEEL_ERR_INVALID_INPUT,
    };
    Failure::new(status, e.to_string())
}

fn transfer(t: &keel_mpi::Transfer) -> keel_transfer {
    keel_transfer {
        id: t.id,
        rank: rank_of(t.rank),
        size: t.size,
    }
}

/// Computes a plan across the ranks of the communicator whose Fortran
/// handle is `comm` (`MPI_Comm_c2f(MPI_COMM_WORLD)`, say): a collective
/// call, made by every rank with its own objects.
///
/// - `spec`: a registry mapping policy (every rank the same), NULL for
///   `greedy-refine`;
/// - `ids`, `weights` (`num_objects` each): global ids (unique across
///   ranks) and loads (finite, ≥ 0);
/// - `sizes`, `migratable` (`num_objects` each, or NULL): bytes moved if
///   the object migrates (reported), whether it may move (non-zero; NULL:
///   all may);
/// - `background` (≥ 0): the rank's load that is not its objects';
///   `speed` (> 0): its relative speed (1 for homogeneous ranks).
///
/// On success `*out` is a new plan. A wrong argument on any rank is the
/// same error on every rank (`KEEL_ERR_INVALID_INPUT`, the message naming
/// the rank); MPI must be initialised (`KEEL_ERR_MPI` otherwise).
///
/// # Safety
///
/// `spec` is NULL or a NUL-terminated string; each array is NULL or valid
/// for `num_objects` reads; `out` is valid for a write; `comm` is a live
/// communicator's Fortran handle on every rank of it.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn keel_mpi_plan(
    comm: c_int,
    spec: *const c_char,
    ids: *const u64,
    weights: *const f64,
    sizes: *const u64,
    migratable: *const u8,
    num_objects: usize,
    background: f64,
    speed: f64,
    out: *mut *mut keel_mpi_plan_result,
) -> keel_status {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        plan_shaped(
            None,
            comm,
            spec,
            ids,
            weights,
            sizes,
            migratable,
            num_objects,
            background,
            speed,
            out,
        )
    }
}

/// As `keel_mpi_plan`, decided in a tree: ranks in groups of `group`
/// consecutive ranks, each group's first rank its leader. A leader
/// gathers only its members' objects and every rank one summary per
/// group, where `keel_mpi_plan` gathers every object on every rank: the
/// shape for thousands of ranks. The outputs, and the same error on every
/// rank, are as `keel_mpi_plan`'s; `spec` places each group's objects on
/// its members. Every rank passes the same `group` (≥ 1); ranks that pass
/// different groups, or call `keel_mpi_plan` instead, all fail at once.
///
/// # Safety
///
/// As `keel_mpi_plan`'s.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn keel_mpi_plan_tree(
    comm: c_int,
    group: usize,
    spec: *const c_char,
    ids: *const u64,
    weights: *const f64,
    sizes: *const u64,
    migratable: *const u8,
    num_objects: usize,
    background: f64,
    speed: f64,
    out: *mut *mut keel_mpi_plan_result,
) -> keel_status {
    // SAFETY: the caller's contract, passed on.
    unsafe {
        plan_shaped(
            Some(group),
            comm,
            spec,
            ids,
            weights,
            sizes,
            migratable,
            num_objects,
            background,
            speed,
            out,
        )
    }
}

/// `keel_mpi_plan` (`group` `None`) and `keel_mpi_plan_tree`.
///
/// # Safety
///
/// As `keel_mpi_plan`'s.
#[allow(clippy::too_many_arguments)]
unsafe fn plan_shaped(
    group: Option<usize>,
    comm: c_int,
    spec: *const c_char,
    ids: *const u64,
    weights: *const f64,
    sizes: *const u64,
    migratable: *const u8,
    num_objects: usize,
    background: f64,
    speed: f64,
    out: *mut *mut keel_mpi_plan_result,
) -> keel_status {
    guard(|| {
        if out.is_null() {
            return Err(Failure::null("out"));
        }
        // SAFETY: valid for a write (the caller's contract).
        unsafe { out.write(std::ptr::null_mut()) };
        let mut initialised: c_int = 0;
        // SAFETY: MPI_Initialized may be called at any time.
        unsafe { ffi::MPI_Initialized(&mut initialised) };
        if initialised == 0 {
            return Err(Failure::new(
                keel_status::KEEL_ERR_MPI,
                "MPI is not initialised: call MPI_Init before keel_mpi_plan",
            ));
        }
        // A private duplicate: Keel's messages never meet the program's.
        let mut dup = std::mem::MaybeUninit::uninit();
        // SAFETY: `comm` is a live communicator's handle on every rank
        // (the caller's contract); MPI_Comm_dup is collective over it.
        let code = unsafe { ffi::MPI_Comm_dup(ffi::RSMPI_Comm_f2c(comm), dup.as_mut_ptr()) };
        if code != 0 {
            return Err(Failure::new(
                keel_status::KEEL_ERR_MPI,
                format!("MPI_Comm_dup failed with code {code}"),
            ));
        }
        // SAFETY: the duplicate is ours; dropping the wrapper frees it.
        let comm = MpiComm::new(unsafe { SimpleCommunicator::from_raw(dup.assume_init()) });

        // This rank's verdict on its arguments travels with the call.
        // SAFETY: the caller's contract on each pointer.
        let local = unsafe { arguments(spec, ids, weights, sizes, migratable, num_objects) };
        let request = local.as_ref().map(|(spec, objects)| PlanRequest {
            spec,
            objects,
            background,
            speed,
            shape: keel_mpi::PlanShape::OneLevel,
        });
        let request = request.as_ref().map_err(|reason| (*reason).clone());
        let decided = match group {
            None => plan_or_refuse(&comm, request),
            Some(group) => plan_in_tree(&comm, request, group),
        }
        .map_err(failure)?;
        let result = keel_mpi_plan_result {
            destinations: decided.destinations.iter().map(|&r| rank_of(r)).collect(),
            exports: decided.exports.iter().map(transfer).collect(),
            imports: decided.imports.iter().map(transfer).collect(),
            metrics: keel_mpi_metrics {
                lambda_before: decided.metrics.lambda_before,
                lambda_after: decided.metrics.lambda_after,
                lib_percent: decided.metrics.lib_percent,
                makespan: decided.metrics.makespan,
                migrations: decided.metrics.migrations as u64,
                bytes_moved: decided.metrics.bytes_moved,
                objects: decided.metrics.objects as u64,
            },
        };
        // SAFETY: valid for a write (checked above).
        unsafe { out.write(Box::into_raw(Box::new(result))) };
        Ok(())
    })
}

/// The spec and this rank's objects, or why the arguments are wrong.
///
/// # Safety
///
/// As `keel_mpi_plan`'s.
unsafe fn arguments(
    spec: *const c_char,
    ids: *const u64,
    weights: *const f64,
    sizes: *const u64,
    migratable: *const u8,
    n: usize,
) -> Result<(String, Vec<LocalObject>), String> {
    let spec = if spec.is_null() {
        keel_mpi::DEFAULT_PLAN_POLICY.to_string()
    } else {
        // SAFETY: the caller's contract.
        unsafe { text(spec, "spec") }
            .map_err(|f| f.message)?
            .to_string()
    };
    let need = |ptr_is_null: bool, what: &str| {
        if ptr_is_null && n > 0 {
            Err(format!("{what} is NULL for {n} objects"))
        } else {
            Ok(())
        }
    };
    need(ids.is_null(), "ids")?;
    need(weights.is_null(), "weights")?;
    // SAFETY: each is NULL or valid for n reads (the caller's contract).
    let (ids, weights, sizes, migratable) = unsafe {
        (
            array(ids, n, n, "ids", "objects").map_err(|f| f.message)?,
            array(weights, n, n, "weights", "objects").map_err(|f| f.message)?,
            array(
                sizes,
                if sizes.is_null() { 0 } else { n },
                n,
                "sizes",
                "objects",
            )
            .map_err(|f| f.message)?,
            array(
                migratable,
                if migratable.is_null() { 0 } else { n },
                n,
                "migratable",
                "objects",
            )
            .map_err(|f| f.message)?,
        )
    };
    let objects = (0..n)
        .map(|i| LocalObject {
            id: ids.map_or(0, |v| v[i]),
            weight: weights.map_or(0.0, |v| v[i]),
            size: sizes.map_or(0, |v| v[i]),
            migratable: migratable.is_none_or(|v| v[i] != 0),
        })
        .collect();
    Ok((spec, objects))
}

/// The rank of each of this rank's objects after the plan, in the order
/// passed; `*len` gets the count. NULL (and 0) for a NULL plan.
///
/// # Safety
///
/// `plan` is NULL or a live plan; `len` is NULL or valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_mpi_plan_destinations(
    plan: *const keel_mpi_plan_result,
    len: *mut usize,
) -> *const i32 {
    // SAFETY: the caller's contract.
    unsafe { lend(plan.as_ref().map(|p| &p.destinations[..]), len) }
}

/// This rank's objects that leave it (`rank`: the destination), in the
/// order passed; `*len` gets the count.
///
/// # Safety
///
/// As `keel_mpi_plan_destinations`.
#[no_mangle]
pub unsafe extern "C" fn keel_mpi_plan_exports(
    plan: *const keel_mpi_plan_result,
    len: *mut usize,
) -> *const keel_transfer {
    // SAFETY: the caller's contract.
    unsafe { lend(plan.as_ref().map(|p| &p.exports[..]), len) }
}

/// Objects that come to this rank (`rank`: the source), by source rank
/// then id; `*len` gets the count.
///
/// # Safety
///
/// As `keel_mpi_plan_destinations`.
#[no_mangle]
pub unsafe extern "C" fn keel_mpi_plan_imports(
    plan: *const keel_mpi_plan_result,
    len: *mut usize,
) -> *const keel_transfer {
    // SAFETY: the caller's contract.
    unsafe { lend(plan.as_ref().map(|p| &p.imports[..]), len) }
}

/// The plan's metrics (the same on every rank) into `*metrics`.
///
/// # Safety
///
/// `plan` is NULL or a live plan; `metrics` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn keel_mpi_plan_metrics(
    plan: *const keel_mpi_plan_result,
    metrics: *mut keel_mpi_metrics,
) -> keel_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let plan = unsafe { plan.as_ref() }.ok_or_else(|| Failure::null("plan"))?;
        if metrics.is_null() {
            return Err(Failure::null("metrics"));
        }
        // SAFETY: non-NULL and valid for a write (the caller's contract).
        unsafe { metrics.write(plan.metrics) };
        Ok(())
    })
}

/// Frees a plan; NULL is ignored.
///
/// # Safety
///
/// `plan` is NULL or a plan from `keel_mpi_plan` not freed before.
#[no_mangle]
pub unsafe extern "C" fn keel_mpi_plan_free(plan: *mut keel_mpi_plan_result) {
    quietly(|| {
        if !plan.is_null() {
            // SAFETY: made by Box::into_raw in keel_mpi_plan, freed once.
            drop(unsafe { Box::from_raw(plan) });
        }
    });
}
