//! In-place writes compute into their destination (Note [In-place kernels]): `add_`,
//! `copy_` and gradient accumulation allocate no buffer of the destination's size, and
//! give the values the out-of-place op gives, for strided destinations, broadcast and
//! promoted operands and aliasing ones.
//!
//! The allocator counts bytes process-wide, so the tests of this binary take `SERIAL`:
//! none allocates while another counts.

use rustgrad::{DType, Result, Tensor, Variable};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

static SERIAL: Mutex<()> = Mutex::new(());

/// The system allocator, counting the bytes it hands out.
struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes allocated while `f` runs.
fn allocated_by(f: impl FnOnce() -> Result<()>) -> Result<usize> {
    let before = ALLOCATED.load(Ordering::Relaxed);
    f()?;
    Ok(ALLOCATED.load(Ordering::Relaxed) - before)
}

fn ramp(n: usize, scale: f32) -> Vec<f32> {
    (0..n).map(|i| (i % 97) as f32 * scale - 3.0).collect()
}

const ROWS: usize = 512;
const COLS: usize = 1024;
const BYTES: usize = ROWS * COLS * 4;

#[test]
fn in_place_writes_allocate_no_destination_sized_buffer() -> Result<()> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let a = Variable::from_slice(&ramp(ROWS * COLS, 0.5), &[ROWS, COLS])?;
    let b = Variable::from_slice(&ramp(ROWS * COLS, 0.25), &[ROWS, COLS])?;
    let expected: Vec<f32> = a
        .to_vec::<f32>()
        .iter()
        .zip(b.to_vec::<f32>())
        .map(|(x, y)| x + y)
        .collect();
    // Before: `a + b` into a temporary, its values copied out into a second one, then
    // scattered into `a` (two buffers of `BYTES`).
    let bytes = allocated_by(|| a.add_(&b))?;
    assert!(bytes < BYTES / 4, "add_ allocated {bytes} bytes");
    assert_eq!(a.to_vec::<f32>(), expected);

    let bytes = allocated_by(|| a.copy_(&b))?;
    assert!(bytes < BYTES / 4, "copy_ allocated {bytes} bytes");
    assert_eq!(a.to_vec::<f32>(), b.to_vec::<f32>());

    // A second backward accumulates into the existing `.grad` in place: the gradient
    // of `sum` is a broadcast one, so nothing of the leaf's size is needed.
    let w = Variable::new(
        Tensor::from_vec(ramp(ROWS * COLS, 1.0), &[ROWS, COLS])?,
        true,
    )?;
    w.sum()?.backward()?;
    let bytes = allocated_by(|| w.sum()?.backward())?;
    assert!(
        bytes < BYTES / 4,
        "accumulating .grad allocated {bytes} bytes"
    );
    assert!(w.grad().unwrap().to_vec::<f32>().iter().all(|&g| g == 2.0));
    Ok(())
}

/// `op_` in place against the out-of-place `op`, elementwise, for one pair.
fn check_against_out_of_place(
    dst: &Variable,
    other: &Variable,
    in_place: impl Fn(&Variable, &Variable) -> Result<()>,
    out_of_place: impl Fn(&Variable, &Variable) -> Result<Variable>,
) -> Result<()> {
    // Bit patterns: `x / x` gives NaN where `x` is 0.
    let bits = |v: &Variable| {
        v.to_vec::<f64>()
            .iter()
            .map(|x| x.to_bits())
            .collect::<Vec<_>>()
    };
    let expected = bits(&out_of_place(dst, other)?);
    in_place(dst, other)?;
    assert_eq!(bits(dst), expected);
    Ok(())
}

#[test]
fn in_place_kernels_match_the_out_of_place_ops() -> Result<()> {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    type InPlace = fn(&Variable, &Variable) -> Result<()>;
    type OutOfPlace = fn(&Variable, &Variable) -> Result<Variable>;
    let ops: [(InPlace, OutOfPlace); 4] = [
        (Variable::add_, Variable::add),
        (Variable::sub_, Variable::sub),
        (Variable::mul_, Variable::mul),
        (Variable::div_, Variable::div),
    ];
    for (in_place, out_of_place) in ops {
        // Contiguous destination, large enough to run on the pool.
        let a = Variable::from_slice(&ramp(300 * 200, 0.5), &[300, 200])?;
        let b = Variable::from_slice(&ramp(300 * 200, 0.125), &[300, 200])?;
        check_against_out_of_place(&a, &b, in_place, out_of_place)?;
        // Transposed (strided) destination and a broadcast row.
        let t = Variable::from_slice(&ramp(200 * 300, 0.5), &[200, 300])?.transpose(0, 1)?;
        let row = Variable::from_slice(&ramp(200, 2.0), &[200])?;
        check_against_out_of_place(&t, &row, in_place, out_of_place)?;
        // A float64 scalar operand into float32 (the result stays float32).
        let s = Variable::from_tensor(Tensor::from_vec(vec![1.5f64], &[])?);
        check_against_out_of_place(&a, &s, in_place, out_of_place)?;
        // An operand aliasing the destination.
        let alias = a.clone();
        check_against_out_of_place(&a, &alias, in_place, out_of_place)?;
    }
    // Integers.
    let i = Variable::from_tensor(Tensor::from_vec((0..64i64).collect(), &[8, 8])?);
    let j = Variable::from_tensor(Tensor::from_vec((1..9i64).collect(), &[8])?);
    check_against_out_of_place(&i, &j, Variable::mul_, Variable::mul)?;
    assert_eq!(i.dtype(), DType::I64);
    Ok(())
}
