//! A storage holds exactly the bytes it counts (Note [Memory statistics]): a kernel that
//! returns a vector with spare capacity (the convolution's weight gradient keeps the
//! first of its per-block partial sums) must not pin the whole allocation for as long
//! as the gradient lives. Before the fix, a ResNet-18 training step kept each conv
//! weight's gradient in an allocation up to eight times its size (RSS 520 MiB with
//! 135 MiB of tensors).
//!
//! The allocator counts live bytes process-wide; this binary has a single test.

use rustgrad::{memory, ConvPadding, DType, Result, Tensor, Variable};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// The system allocator, counting the bytes allocated and not yet freed.
struct LiveBytes;

static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded unchanged to `System`; only a counter is added.
unsafe impl GlobalAlloc for LiveBytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract for `realloc` is passed on as it is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: LiveBytes = LiveBytes;

/// conv2d of a 16-sample batch, summed, backward: fills `weight.grad`.
fn conv_backward(weight: &Variable) -> Result<()> {
    let x = Variable::new(Tensor::ones(&[16, 16, 12, 12], DType::F32).unwrap(), false)?;
    x.conv2d(weight, None, &[1], ConvPadding::Explicit(&[1]), &[1], 1)?
        .sum()?
        .backward()
}

#[test]
fn a_weight_gradient_holds_only_its_own_bytes() -> Result<()> {
    let grad_bytes = 64 * 16 * 3 * 3 * 4;
    // One thread: the gemm crate gives each thread that runs a GEMM one packing slab the
    // size of its L2 cache (1 MiB here), allocated at that thread's first GEMM and
    // reused after (Note [GEMM plans]); on a pool, which threads run the measured
    // call's tasks is up to the scheduler, so the warm-up could miss one. The partial
    // sums this test is about do not depend on the thread count.
    rustgrad::set_num_threads(1).unwrap();
    // Warm up: the graph arena and the first-use caches (the calling thread's slab).
    let warm = Variable::new(Tensor::ones(&[64, 16, 3, 3], DType::F32).unwrap(), true)?;
    conv_backward(&warm)?;
    drop(warm);

    let weight = Variable::new(Tensor::ones(&[64, 16, 3, 3], DType::F32).unwrap(), true)?;
    let (live, counted) = (LIVE.load(Ordering::Relaxed), memory::allocated());
    conv_backward(&weight)?;
    let grad = weight.grad().expect("the weight requires grad");
    let live_growth = LIVE.load(Ordering::Relaxed) - live;
    assert_eq!(memory::allocated() - counted, grad_bytes);
    // The gradient's buffer plus small bookkeeping (its Variable and storage headers),
    // not the eight partial sums the kernel reduced it from.
    assert!(
        live_growth < (grad_bytes + grad_bytes / 4) as isize,
        "{live_growth} live bytes for a {grad_bytes}-byte gradient"
    );
    drop(grad);
    Ok(())
}
