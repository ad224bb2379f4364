//! Saved-tensor hooks from Rust (Note [Saved tensor hooks]): pack at save time, unpack
//! in backward, no version check on packed tensors, the innermost hooks win, and a
//! pack error is deferred for the op's caller.

use rustgrad::autograd::saved::{
    pop_saved_tensors_hooks, push_saved_tensors_hooks, PackedTensor, SavedTensorHooks,
};
use rustgrad::variable::take_deferred_error;
use rustgrad::{Error, Result, Tensor, Variable};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

fn leaf(data: &[f64], requires_grad: bool) -> Variable {
    Variable::new(
        Tensor::from_vec(data.to_vec(), &[data.len()]).unwrap(),
        requires_grad,
    )
    .unwrap()
}

/// Keeps the tensor and counts packs and unpacks; `scale` multiplies what unpack
/// returns, so a test can see which hooks answered.
struct Counting {
    packs: AtomicUsize,
    unpacks: Arc<AtomicUsize>,
    scale: f64,
}

struct Kept(Variable, Arc<AtomicUsize>, f64);

impl PackedTensor<Variable> for Kept {
    fn unpack(&self) -> Result<Variable> {
        self.1.fetch_add(1, Ordering::SeqCst);
        let s = Variable::from_tensor(Tensor::scalar(self.2, rustgrad::DType::F64));
        self.0.mul(&s)
    }
    fn nbytes(&self) -> usize {
        0
    }
}

impl SavedTensorHooks<Variable> for Counting {
    fn pack(&self, value: &Variable) -> Result<Arc<dyn PackedTensor<Variable>>> {
        self.packs.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Kept(
            value.detach(),
            self.unpacks.clone(),
            self.scale,
        )))
    }
}

fn counting(scale: f64) -> Arc<Counting> {
    Arc::new(Counting {
        packs: AtomicUsize::new(0),
        unpacks: Arc::new(AtomicUsize::new(0)),
        scale,
    })
}

#[test]
fn pack_at_save_unpack_in_backward_innermost_wins() {
    let x = leaf(&[1.0, 2.0], true);
    let w = leaf(&[3.0, 4.0], false);
    let outer = counting(1.0);
    let inner = counting(10.0);
    push_saved_tensors_hooks::<Variable>(outer.clone());
    push_saved_tensors_hooks::<Variable>(inner.clone());
    let y = x.mul(&w).unwrap();
    pop_saved_tensors_hooks();
    pop_saved_tensors_hooks();
    assert_eq!(inner.packs.load(Ordering::SeqCst), 1);
    assert_eq!(outer.packs.load(Ordering::SeqCst), 0);
    // Packed tensors are not version-checked: the write after the save is read.
    w.add_(&leaf(&[1.0, 1.0], false)).unwrap();
    y.sum().unwrap().backward().unwrap();
    assert_eq!(inner.unpacks.load(Ordering::SeqCst), 1);
    assert_eq!(x.grad().unwrap().to_vec::<f64>(), vec![40.0, 50.0]);
}

struct Failing;

impl SavedTensorHooks<Variable> for Failing {
    fn pack(&self, _: &Variable) -> Result<Arc<dyn PackedTensor<Variable>>> {
        Err(Error::InvalidArgument("pack refused".into()))
    }
}

#[test]
fn a_pack_error_is_deferred() {
    let x = leaf(&[1.0], true);
    push_saved_tensors_hooks::<Variable>(Arc::new(Failing));
    let _ = x.mul(&x).unwrap();
    pop_saved_tensors_hooks();
    let err = take_deferred_error().expect("deferred").to_string();
    assert!(err.contains("pack refused"), "{err}");
    assert!(take_deferred_error().is_none());
}
