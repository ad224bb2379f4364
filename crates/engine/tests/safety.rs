//! Size arithmetic, bounds, overlap and lock-order checks (Notes [Checked size
//! arithmetic], [Overlapping writes], [Locking of storages] in docs/architecture.md).

use rustgrad::kernels::{elementwise, matmul, reduce};
use rustgrad::layout::Layout;
use rustgrad::{DType, Error, Tensor, Variable};
use std::sync::mpsc;
use std::time::Duration;

#[test]
fn views_whose_element_count_overflows_are_errors() {
    // 1024 * 2^54 = 2^64 wraps to 0 == numel of zeros(0).
    let empty = Tensor::zeros(&[0], DType::F32).unwrap();
    assert_eq!(
        empty.view(&[1024, 1 << 54]).err(),
        Some(Error::NumelOverflow)
    );
    assert_eq!(
        empty.reshape(&[1024, 1 << 54]).err(),
        Some(Error::NumelOverflow)
    );
    let one = Tensor::ones(&[1], DType::F32).unwrap();
    assert_eq!(
        one.expand(&[1 << 32, 1 << 32]).err(),
        Some(Error::NumelOverflow)
    );
    // Broadcasting in a binary op goes through the same check.
    let col = one.expand(&[1 << 32, 1]).unwrap();
    let row = one.expand(&[1, 1 << 32]).unwrap();
    assert_eq!(
        col.binary(&row, rustgrad::tensor::BinaryOp::Add).err(),
        Some(Error::NumelOverflow)
    );
}

#[test]
fn kernels_reject_layouts_outside_their_storage() {
    let data = [1.0f32, 2.0, 3.0];
    let past_end = Layout::new(smallvec::smallvec![2], smallvec::smallvec![3], 0);
    assert!(matches!(
        elementwise::map1(&data, &past_end, |x| x),
        Err(Error::OutOfBounds { .. })
    ));
    let wrapping = Layout::new(
        smallvec::smallvec![3],
        smallvec::smallvec![usize::MAX / 2],
        0,
    );
    assert!(elementwise::map1(&data, &wrapping, |x| x).is_err());
    assert!(reduce::sum(&data, &past_end, &[0]).is_err());
    let ok = Layout::contiguous(&[3]);
    assert!(elementwise::map2(&data, &ok, &data, &past_end, |x, y| x + y).is_err());
    let mut dst = [0.0f32; 3];
    assert!(elementwise::scatter(&mut dst, &past_end, &[1.0, 2.0]).is_err());
    // An empty layout addresses nothing, wherever its offset points.
    let empty = Layout::new(smallvec::smallvec![0], smallvec::smallvec![1], 17);
    assert_eq!(
        elementwise::map1(&data, &empty, |x| x).unwrap(),
        Vec::<f32>::new()
    );
    let a = matmul::MatOperand {
        data: &data,
        batch_strides: &[],
        offset: 2,
        row_stride: 1,
        col_stride: 1,
    };
    assert!(matches!(
        matmul::matmul(&[], (2, 2, 2), &a, &a),
        Err(Error::OutOfBounds { .. })
    ));
}

#[test]
fn empty_views_past_the_end_of_their_buffer_work() {
    // zeros(3, 0)[2]: offset 2 in an empty buffer.
    let z = Tensor::zeros(&[3, 0], DType::F32)
        .unwrap()
        .select(0, 2)
        .unwrap();
    assert_eq!(z.layout().offset(), 2);
    assert_eq!(z.try_to_vec::<f32>().unwrap(), Vec::<f32>::new());
    assert_eq!(z.deep_clone().unwrap().shape(), &[0]);
    assert_eq!(
        z.binary(
            &Tensor::scalar(1.0, DType::F32),
            rustgrad::tensor::BinaryOp::Add
        )
        .unwrap()
        .shape(),
        &[0]
    );
    z.copy_from(
        &Tensor::ones(&[0], DType::F32).unwrap(),
        rustgrad::storage::WriteSite::External("t".into()),
    )
    .unwrap();
    assert_eq!(z.sum_dims(&[0], false).unwrap().to_vec::<f32>(), vec![0.0]);
    let x = Variable::new(Tensor::zeros(&[3, 0], DType::F32).unwrap(), true).unwrap();
    x.select(0, 2)
        .unwrap()
        .mul_scalar(2.0)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    assert_eq!(x.grad().unwrap().shape().as_slice(), &[3, 0]);
}

#[test]
fn materialising_a_huge_view_is_an_allocation_error() {
    let v = Tensor::ones(&[1], DType::F32)
        .unwrap()
        .expand(&[1 << 20, 1 << 20])
        .unwrap();
    assert!(matches!(v.deep_clone(), Err(Error::OutOfMemory { .. })));
    assert!(matches!(
        v.try_to_vec::<f32>(),
        Err(Error::OutOfMemory { .. })
    ));
    assert!(matches!(
        v.to_dtype(DType::F64),
        Err(Error::OutOfMemory { .. })
    ));
    assert!(matches!(
        v.unary(rustgrad::tensor::UnaryOp::Exp),
        Err(Error::OutOfMemory { .. })
    ));
    // Printing reads only the shown elements.
    assert!(Variable::from_tensor(v.clone()).repr().contains("..."));
    // fill_ writes the one shared location.
    Variable::from_tensor(v).fill_(3.0).unwrap();
}

#[test]
fn overlapping_in_place_writes_are_refused() {
    let a = Variable::from_tensor(Tensor::ones(&[1], DType::F32).unwrap());
    let one = Variable::from_tensor(Tensor::scalar(1.0, DType::F32));
    assert_eq!(
        a.expand(&[3]).unwrap().add_(&one).err(),
        Some(Error::InternalOverlap)
    );
    let m = Variable::from_tensor(Tensor::ones(&[3, 3], DType::F32).unwrap());
    assert_eq!(m.add_(&m.t().unwrap()).err(), Some(Error::PartialOverlap));
    let r = Variable::from_tensor(Tensor::arange(0.0, 4.0, 1.0, DType::F32).unwrap());
    let dst = r.slice(0, Some(1), None, 1).unwrap();
    let src = r.slice(0, None, Some(-1), 1).unwrap();
    assert_eq!(dst.copy_(&src).err(), Some(Error::PartialOverlap));
    assert_eq!(r.to_vec::<f32>(), vec![0.0, 1.0, 2.0, 3.0]);
    // The whole tensor aliased in the same order is fine.
    m.add_(&m).unwrap();
    assert_eq!(m.to_vec::<f32>(), vec![2.0; 9]);
}

/// Two storages, each written by one thread and read together with the other by
/// another: with read locks taken in argument order, a writer-preferring `RwLock`
/// (std's on Linux) deadlocks as soon as each storage has a queued writer while a
/// reader holds the other. Locks taken in one global order cannot deadlock.
#[test]
fn concurrent_cross_in_place_ops_do_not_deadlock() {
    let a = Variable::from_tensor(Tensor::ones(&[64], DType::F32).unwrap());
    let b = Variable::from_tensor(Tensor::ones(&[64], DType::F32).unwrap());
    let (done_tx, done_rx) = mpsc::channel();
    let threads = 4;
    for t in 0..threads {
        let (a, b, done) = (a.clone(), b.clone(), done_tx.clone());
        std::thread::spawn(move || {
            let (dst, src) = if t % 2 == 0 { (&a, &b) } else { (&b, &a) };
            for _ in 0..20_000 {
                dst.mul_(src).unwrap();
                // Keep the values bounded (x * y stays 1 when both are 1).
            }
            done.send(()).unwrap();
        });
    }
    for _ in 0..threads {
        done_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("in-place ops on two storages deadlocked");
    }
}

/// Every user-sized allocation is fallible (Note [Allocation failures]): a result of
/// 2^40 elements, from a factory or from a view of one stored element, is PyTorch's
/// allocator error, never an abort in the allocator.
#[test]
fn huge_results_are_allocation_errors() {
    let oom = |r: rustgrad::Result<Variable>| matches!(r.err(), Some(Error::OutOfMemory { .. }));
    assert!(matches!(
        Tensor::zeros(&[1 << 20, 1 << 20], DType::F32).err(),
        Some(Error::OutOfMemory { .. })
    ));
    assert!(matches!(
        Tensor::full_scalar(&[1 << 40], rustgrad::tensor::Scalar::Int(7), DType::I64).err(),
        Some(Error::OutOfMemory { .. })
    ));
    assert_eq!(
        Tensor::ones(&[1 << 40, 1 << 40], DType::F32).err(),
        Some(Error::NumelOverflow)
    );
    let one = Variable::from_tensor(Tensor::ones(&[1], DType::F32).unwrap());
    let flat = one.expand(&[1 << 40]).unwrap();
    let square = one.expand(&[1 << 20, 1 << 20]).unwrap();
    for x in [&flat, &square] {
        assert!(oom(x.flip(&[0])));
        assert!(oom(x.roll(&[1], &[0])));
        assert!(oom(x.roll(&[1], &[])));
        assert!(oom(x.repeat_interleave(&[2], None)));
    }
    let theta = Variable::from_tensor(Tensor::zeros(&[1, 2, 3], DType::F32).unwrap());
    assert!(oom(theta.affine_grid(&[1, 1, 1, 1 << 40], false)));
    assert!(oom(theta.affine_grid(&[1, 1, 1 << 20, 1 << 20], true)));
}
