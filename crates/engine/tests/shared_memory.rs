//! `Tensor::from_external`: tensors over memory another owner keeps alive (Note [Shared
//! memory]). Expected values are the owner's own data.

use rustgrad::layout::Layout;
use rustgrad::storage::WriteSite;
use rustgrad::{DType, Error, Tensor};
use std::ptr::NonNull;

/// A tensor over a boxed Vec that the tensor owns from then on.
fn over(data: Vec<f64>, shape: &[usize], strides: &[usize]) -> rustgrad::Result<Tensor> {
    let mut owner = Box::new(data);
    let len = owner.len();
    let ptr = NonNull::new(owner.as_mut_ptr() as *mut u8).unwrap();
    let layout = Layout::new(shape.into(), strides.into(), 0);
    // SAFETY: the Vec's heap buffer holds `len` aligned f64 and does not move when the
    // box (moved into the tensor as its owner) moves; nothing else touches it.
    unsafe { Tensor::from_external(ptr, len, DType::F64, owner, layout) }
}

#[test]
fn reads_writes_and_clones_external_memory() -> rustgrad::Result<()> {
    let t = over((0..6).map(f64::from).collect(), &[3, 2], &[1, 3])?;
    assert_eq!(t.to_vec::<f64>(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let owned = t.deep_clone()?;
    t.fill(7.0, WriteSite::External("test".into()))?;
    assert_eq!(t.to_vec::<f64>(), vec![7.0; 6]);
    assert_eq!(owned.to_vec::<f64>(), vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    Ok(())
}

#[test]
fn a_layout_past_the_memory_is_refused() {
    let r = over(vec![0.0; 4], &[2, 3], &[3, 1]);
    assert!(matches!(r, Err(Error::OutOfBounds { .. })), "{r:?}");
}
