//! `rustgrad::nn` and `rustgrad::models` (Note [Rust modules]): initial weights equal to
//! PyTorch's for the same seed (vectors from PyTorch in tests/vectors/rust_nn_init.json),
//! torchvision's names, `load_state_dict`'s rules and messages (those of the Python
//! package, quoted from it), checkpoints that never panic, and freezing.

use rustgrad::autograd::saved::{
    pop_saved_tensors_hooks, push_saved_tensors_hooks, PackedTensor, SavedTensorHooks,
};
use rustgrad::models::{lenet, resnet18, resnet34, resnet50, Block, ResNet};
use rustgrad::nn::{self, Module, StateDict};
use rustgrad::optim::Sgd;
use rustgrad::serialize::RawTensor;
use rustgrad::{DType, Result, Tensor, Variable};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The default generator is process-wide and tests run on threads: seeded
/// constructions hold this lock.
static SEED: Mutex<()> = Mutex::new(());

fn seeded<T>(make: impl FnOnce() -> Result<T>) -> T {
    let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
    rustgrad::manual_seed(0);
    make().unwrap()
}

fn vectors() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/vectors/rust_nn_init.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn dtype_name(dtype: DType) -> &'static str {
    dtype.torch_name().trim_start_matches("torch.")
}

/// Asserts that `tensor` is the vector `expected` bit for bit.
fn assert_tensor(case: &str, key: &str, tensor: &Tensor, expected: &Value) {
    let shape: Vec<usize> = serde_json::from_value(expected["shape"].clone()).unwrap();
    assert_eq!(tensor.shape(), &shape[..], "{case}: {key} shape");
    assert_eq!(
        dtype_name(tensor.dtype()),
        expected["dtype"],
        "{case}: {key}"
    );
    let raw = RawTensor::from_tensor(key, tensor);
    let data = expected["data"].as_array().unwrap();
    if let Some(sha) = expected.get("sha256") {
        let got: String = Sha256::digest(&raw.data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(got, sha.as_str().unwrap(), "{case}: {key} bytes");
    }
    match tensor.dtype() {
        DType::F32 => {
            let got = tensor.to_vec::<f32>();
            for (i, v) in data.iter().enumerate() {
                let want = v.as_f64().unwrap() as f32;
                assert_eq!(got[i].to_bits(), want.to_bits(), "{case}: {key}[{i}]");
            }
        }
        DType::I64 => {
            let got = tensor.to_vec::<i64>();
            let want: Vec<i64> = data.iter().map(|v| v.as_i64().unwrap()).collect();
            assert_eq!(got[..want.len()], want[..], "{case}: {key}");
        }
        other => panic!("unexpected dtype {other:?}"),
    }
}

/// The Rust module that each case of the vectors file names.
fn build(name: &str) -> Box<dyn Module> {
    let grouped = nn::ConvOptions::default().groups(2).bias(false);
    let strided = nn::ConvOptions {
        stride: [2, 1],
        padding: [1, 0],
        ..Default::default()
    };
    seeded(|| -> Result<Box<dyn Module>> {
        Ok(match name {
            "Linear(5, 3)" => Box::new(nn::Linear::new(5, 3)?),
            "Linear(4, 2, bias=False)" => Box::new(nn::Linear::with_bias(4, 2, false)?),
            "Conv1d(3, 4, 3)" => Box::new(nn::Conv1d::new(3, 4, 3)?),
            "Conv2d(3, 4, 3)" => Box::new(nn::Conv2d::new(3, 4, 3)?),
            "Conv2d(4, 6, 3, groups=2, bias=False)" => {
                Box::new(nn::Conv2d::with(4, 6, [3, 3], grouped)?)
            }
            "ConvTranspose2d(3, 4, 3)" => Box::new(nn::ConvTranspose2d::new(3, 4, 3)?),
            "Conv2d(3, 4, (2, 3), stride=(2, 1), padding=(1, 0))" => {
                Box::new(nn::Conv2d::with(3, 4, [2, 3], strided)?)
            }
            "ConvTranspose2d(4, 2, (3, 1), groups=2)" => Box::new(nn::ConvTranspose2d::with(
                4,
                2,
                [3, 1],
                nn::ConvOptions::default().groups(2),
            )?),
            "BatchNorm1d(3)" => Box::new(nn::BatchNorm1d::new(3)?),
            "BatchNorm2d(4)" => Box::new(nn::BatchNorm2d::new(4)?),
            "LayerNorm([4])" => Box::new(nn::LayerNorm::new(&[4])?),
            "GroupNorm(2, 4)" => Box::new(nn::GroupNorm::new(2, 4)?),
            "Embedding(5, 3)" => Box::new(nn::Embedding::new(5, 3)?),
            "Embedding(5, 3, padding_idx=1)" => {
                Box::new(nn::Embedding::with_padding_idx(5, 3, Some(1))?)
            }
            "LeNet" => Box::new(lenet(10)?),
            "ResNet(Basic, [1, 2, 1, 1], [4, 8, 8, 16], 5)" => Box::new(ResNet::with_widths(
                Block::Basic,
                [1, 2, 1, 1],
                [4, 8, 8, 16],
                5,
            )?),
            "ResNet(Bottleneck, [1, 1, 2, 1], [2, 4, 4, 8], 3)" => Box::new(ResNet::with_widths(
                Block::Bottleneck,
                [1, 1, 2, 1],
                [2, 4, 4, 8],
                3,
            )?),
            other => panic!("no Rust module for case {other}"),
        })
    })
}

#[test]
fn same_seed_gives_pytorchs_initial_weights_for_every_layer() {
    let vectors = vectors();
    let cases = vectors["layers"].as_array().unwrap();
    assert_eq!(cases.len(), 17);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let module = build(name);
        let state = module.state_dict();
        let expected = case["state"].as_array().unwrap();
        let keys: Vec<&str> = state.keys().collect();
        let want: Vec<&str> = expected.iter().map(|e| e[0].as_str().unwrap()).collect();
        assert_eq!(keys, want, "{name}: state_dict keys and order");
        for ((key, tensor), e) in state.iter().zip(expected) {
            assert_tensor(name, key, tensor, &e[1]);
        }
    }
}

#[test]
fn full_size_resnets_have_torchvisions_names_and_shapes() {
    let vectors = vectors();
    type Constructor = fn(usize) -> Result<ResNet>;
    let models: [(&str, Constructor); 3] = [
        ("resnet18", resnet18),
        ("resnet34", resnet34),
        ("resnet50", resnet50),
    ];
    for (name, make) in models {
        // Names and shapes only: no 60M random draws in a debug build.
        let model = nn::init::skip_init(|| make(1000)).unwrap();
        assert!(model.fc.weight.to_vec::<f32>().iter().all(|&v| v == 0.0));
        let got: Vec<(String, Vec<usize>)> = model
            .state_dict()
            .iter()
            .map(|(k, t)| (k.to_string(), t.shape().to_vec()))
            .collect();
        let want: Vec<(String, Vec<usize>)> =
            serde_json::from_value(vectors["shapes"][name].clone()).unwrap();
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn models_are_send_and_sync() {
    fn shareable<T: Send + Sync>() {}
    shareable::<ResNet>();
    shareable::<rustgrad::models::LeNet>();
    shareable::<nn::Sequential>();
    shareable::<Box<dyn Module>>();
}

#[test]
fn names_buffers_children_and_modes() {
    let model = seeded(|| ResNet::with_widths(Block::Basic, [1, 1, 1, 1], [2, 2, 4, 4], 3));
    let params: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(params[..3], ["conv1.weight", "bn1.weight", "bn1.bias"]);
    assert!(params.contains(&"layer2.0.downsample.0.weight".to_string()));
    let buffers: Vec<String> = model.named_buffers().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        buffers[..3],
        [
            "bn1.running_mean",
            "bn1.running_var",
            "bn1.num_batches_tracked"
        ]
    );
    let children: Vec<String> = model.named_children().into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        children,
        [
            "conv1", "bn1", "relu", "maxpool", "layer1", "layer2", "layer3", "layer4", "avgpool",
            "fc"
        ]
    );
    assert!(model.is_training());
    model.eval();
    assert!(!model.is_training());
    // Every module but the flagless activations (Note [Rust modules]).
    for (name, m) in model.named_descendants() {
        assert_eq!(m.is_training(), name.ends_with("relu"), "{name}");
    }
    model.train(true);
    assert!(model.layer1.children()[0].is_training());
    // Batch norm counts its training-mode forwards in num_batches_tracked.
    let x = Variable::from_tensor(Tensor::ones(&[2, 3, 32, 32], DType::F32).unwrap());
    model.forward(&x).unwrap();
    let tracked = model
        .state_dict()
        .get("bn1.num_batches_tracked")
        .unwrap()
        .to_vec::<i64>();
    assert_eq!(tracked, [1]);
}

/// The module of the error-message tests: `nn.Sequential(nn.Linear(2, 3),
/// nn.BatchNorm1d(3))`.
fn small() -> nn::Sequential {
    seeded(|| {
        Ok(nn::Sequential::new()
            .add(nn::Linear::new(2, 3)?)
            .add(nn::BatchNorm1d::new(3)?))
    })
}

fn zeros(shape: &[usize]) -> Tensor {
    Tensor::zeros(shape, DType::F32).unwrap()
}

#[test]
fn load_state_dict_reports_every_problem_in_the_python_packages_words_and_changes_nothing() {
    let model = small();
    let before = model.state_dict();
    let snapshot: Vec<Vec<u8>> = before
        .iter()
        .map(|(k, t)| RawTensor::from_tensor(k, t).data)
        .collect();
    let mut sd = StateDict::new();
    for (k, t) in before.iter() {
        sd.insert(
            k,
            t.contiguous().unwrap().to_dtype(t.dtype()).unwrap().clone(),
        );
    }
    sd.remove("0.bias");
    sd.insert("0.extra", zeros(&[1]));
    sd.insert("2.weight", zeros(&[1]));
    sd.insert("1.weight", zeros(&[4]));
    sd.insert("1.running_var", zeros(&[2, 2]));
    sd.remove("1.num_batches_tracked");
    // Also change a loadable entry: it must not be written when loading fails.
    sd.insert("0.weight", Tensor::full(&[3, 2], 7.0, DType::F32).unwrap());
    let err = model.load_state_dict(&sd, true).unwrap_err().to_string();
    // The Python package's message for the same module and dict (rustgrad 2026-11-27):
    // nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3)).load_state_dict(sd).
    assert_eq!(
        err,
        "Error(s) in loading state_dict for Sequential:\n\t\
         Missing key(s) in state_dict: \"0.bias\". \n\t\
         Unexpected key(s) in state_dict: \"2.weight\", \"0.extra\". \n\t\
         size mismatch for 1.weight: copying a param with shape torch.Size([4]) from \
         checkpoint, the shape in current model is torch.Size([3]).\n\t\
         size mismatch for 1.running_var: copying a param with shape torch.Size([2, 2]) from \
         checkpoint, the shape in current model is torch.Size([3])."
    );
    let after: Vec<Vec<u8>> = model
        .state_dict()
        .iter()
        .map(|(k, t)| RawTensor::from_tensor(k, t).data)
        .collect();
    assert_eq!(after, snapshot, "a failed load changed the module");

    // strict=false: only shape mismatches are errors; the keys are reported.
    let mut partial = StateDict::new();
    partial.insert("0.weight", zeros(&[3, 2]));
    partial.insert("zz", zeros(&[1]));
    let keys = model.load_state_dict(&partial, false).unwrap();
    assert_eq!(
        keys.missing_keys,
        [
            "0.bias",
            "1.weight",
            "1.bias",
            "1.running_mean",
            "1.running_var"
        ]
    );
    assert_eq!(keys.unexpected_keys, ["zz"]);
    partial.insert("0.weight", zeros(&[4]));
    assert_eq!(
        model
            .load_state_dict(&partial, false)
            .unwrap_err()
            .to_string(),
        "Error(s) in loading state_dict for Sequential:\n\tsize mismatch for 0.weight: copying \
         a param with shape torch.Size([4]) from checkpoint, the shape in current model is \
         torch.Size([3, 2])."
    );
}

#[test]
fn a_different_dtype_is_converted_as_copy_does() {
    // As PyTorch and the Python package: load_state_dict copies with copy_, which
    // converts float64 (or integer) values to the parameter's dtype.
    let model = small();
    let mut sd = model.state_dict();
    sd.insert("0.weight", Tensor::full(&[3, 2], 0.1, DType::F64).unwrap());
    sd.insert("0.bias", Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap());
    model.load_state_dict(&sd, true).unwrap();
    let loaded = model.state_dict();
    assert_eq!(loaded.get("0.weight").unwrap().dtype(), DType::F32);
    assert_eq!(loaded.get("0.weight").unwrap().to_vec::<f32>(), [0.1f32; 6]);
    assert_eq!(
        loaded.get("0.bias").unwrap().to_vec::<f32>(),
        [1.0, 2.0, 3.0]
    );
}

#[test]
fn checkpoints_round_trip_and_corrupted_bytes_are_errors_never_panics() {
    let model = small();
    let bytes = nn::state_dict_to_bytes(&model.state_dict()).unwrap();
    let back = nn::load_state_dict_bytes(&bytes).unwrap();
    let keys: Vec<&str> = back.keys().collect();
    assert_eq!(
        keys,
        [
            "0.weight",
            "0.bias",
            "1.weight",
            "1.bias",
            "1.running_mean",
            "1.running_var",
            "1.num_batches_tracked"
        ]
    );
    let other = small();
    other.load_state_dict(&back, true).unwrap();
    for len in 0..bytes.len() {
        assert!(
            nn::load_state_dict_bytes(&bytes[..len]).is_err(),
            "truncated at {len}"
        );
    }
    // Every single-bit flip: an error (the checksum covers header and data) or, for
    // the few flips of JSON padding that leave the same content, the same state dict.
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        if let Ok(sd) = nn::load_state_dict_bytes(&flipped) {
            let same = sd.iter().zip(back.iter()).all(|((a, x), (b, y))| {
                a == b && RawTensor::from_tensor(a, x) == RawTensor::from_tensor(b, y)
            });
            assert!(
                same && sd.len() == back.len(),
                "bit {bit} changed the state dict"
            );
        }
    }
    // Hostile headers: huge shapes and offsets, views outside their storage.
    let hostile = [
        &b"\xff\xff\xff\xff\xff\xff\xff\xff{}"[..],
        b"\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":{}}        ",
        b"\x40\x00\x00\x00\x00\x00\x00\x00{\"a\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,0]}}",
    ];
    for h in hostile {
        assert!(nn::load_state_dict_bytes(h).is_err());
    }
    assert!(nn::load_file("/nonexistent/checkpoint.safetensors").is_err());
}

/// Counts the tensors that ops save for backward.
struct CountSaves(AtomicUsize);
struct Kept(Variable);

impl PackedTensor<Variable> for Kept {
    fn unpack(&self) -> Result<Variable> {
        Ok(self.0.clone())
    }
    fn nbytes(&self) -> usize {
        0
    }
}

impl SavedTensorHooks<Variable> for CountSaves {
    fn pack(&self, value: &Variable) -> Result<Arc<dyn PackedTensor<Variable>>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Arc::new(Kept(value.clone())))
    }
}

#[test]
fn a_frozen_base_saves_nothing_gets_no_gradients_and_only_fc_changes() {
    let mut model = seeded(|| ResNet::with_widths(Block::Basic, [1, 1, 1, 1], [4, 4, 8, 8], 10));
    model.requires_grad_(false).unwrap();
    model.fc = seeded(|| nn::Linear::new(8, 3));
    model.eval();
    let base_before: Vec<(String, Vec<u8>)> = model
        .state_dict()
        .iter()
        .filter(|(k, _)| !k.starts_with("fc."))
        .map(|(k, t)| (k.to_string(), RawTensor::from_tensor(k, t).data))
        .collect();
    let fc_before = model.fc.weight.to_vec::<f32>();
    let x = Variable::from_tensor(seeded(|| {
        rustgrad::random::randn(&[2, 3, 32, 32], DType::F32)
    }));
    let y = Variable::from_tensor(Tensor::from_vec(vec![0i64, 2], &[2]).unwrap());

    let counter = Arc::new(CountSaves(AtomicUsize::new(0)));
    push_saved_tensors_hooks::<Variable>(counter.clone());
    let features = model
        .layer4
        .forward(
            &model
                .layer3
                .forward(
                    &model
                        .layer2
                        .forward(
                            &model
                                .layer1
                                .forward(
                                    &model
                                        .maxpool
                                        .forward(
                                            &model
                                                .relu
                                                .forward(
                                                    &model
                                                        .bn1
                                                        .forward(&model.conv1.forward(&x).unwrap())
                                                        .unwrap(),
                                                )
                                                .unwrap(),
                                        )
                                        .unwrap(),
                                )
                                .unwrap(),
                        )
                        .unwrap(),
                )
                .unwrap(),
        )
        .unwrap();
    let base_saves = counter.0.load(Ordering::SeqCst);
    pop_saved_tensors_hooks();
    assert_eq!(base_saves, 0, "the frozen base saved tensors for backward");
    assert!(!features.requires_grad() && features.grad_fn().is_none());

    let params = model.fc.parameters();
    let mut sgd = Sgd::new(params, 0.1).unwrap().with_momentum(0.9);
    for _ in 0..3 {
        sgd.zero_grad().unwrap();
        let loss = nn::cross_entropy(&model.forward(&x).unwrap(), &y).unwrap();
        loss.backward().unwrap();
        sgd.step().unwrap();
    }
    for (name, p) in model.named_parameters() {
        assert_eq!(p.grad().is_some(), name.starts_with("fc."), "{name}");
    }
    let base_after: Vec<(String, Vec<u8>)> = model
        .state_dict()
        .iter()
        .filter(|(k, _)| !k.starts_with("fc."))
        .map(|(k, t)| (k.to_string(), RawTensor::from_tensor(k, t).data))
        .collect();
    assert_eq!(base_after, base_before, "the frozen base changed");
    assert_ne!(
        model.fc.weight.to_vec::<f32>(),
        fc_before,
        "fc did not train"
    );
}

#[test]
fn batches_cover_every_row_once_shuffled_by_the_seed() {
    let x = Tensor::from_vec((0..7).map(|v| v as f32).collect(), &[7, 1]).unwrap();
    let y = Tensor::from_vec((0..7).collect::<Vec<i64>>(), &[7]).unwrap();
    let epoch = |drop_last: bool| -> Vec<Vec<i64>> {
        let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
        rustgrad::manual_seed(0);
        nn::Batches::new(vec![x.clone(), y.clone()], 3)
            .unwrap()
            .shuffle()
            .unwrap()
            .drop_last(drop_last)
            .map(|b| {
                let b = b.unwrap();
                let xs: Vec<i64> = b[0].to_vec::<f32>().iter().map(|&v| v as i64).collect();
                assert_eq!(xs, b[1].to_vec::<i64>(), "inputs and targets stay paired");
                xs
            })
            .collect()
    };
    let all = epoch(false);
    // torch.manual_seed(0); torch.randperm(7) (PyTorch 2.15).
    assert_eq!(all.concat(), [4, 0, 5, 3, 2, 6, 1]);
    assert_eq!(all.iter().map(Vec::len).collect::<Vec<_>>(), [3, 3, 1]);
    assert_eq!(epoch(true).len(), 2);
    assert!(nn::Batches::new(vec![x, zeros(&[6])], 2).is_err());
}

#[test]
fn layers_run_forward_with_the_expected_shapes() {
    let x4 = Variable::from_tensor(Tensor::ones(&[2, 4, 8, 8], DType::F32).unwrap());
    let cases: Vec<(Box<dyn Module>, Vec<usize>)> = seeded(|| {
        Ok(vec![
            (
                Box::new(nn::Conv2d::new(4, 6, 3)?) as Box<dyn Module>,
                vec![2, 6, 6, 6],
            ),
            (
                Box::new(nn::ConvTranspose2d::new(4, 2, 3)?),
                vec![2, 2, 10, 10],
            ),
            (Box::new(nn::BatchNorm2d::new(4)?), vec![2, 4, 8, 8]),
            (Box::new(nn::GroupNorm::new(2, 4)?), vec![2, 4, 8, 8]),
            (Box::new(nn::LayerNorm::new(&[8])?), vec![2, 4, 8, 8]),
            (Box::new(nn::MaxPool2d::new(2, 2, 0)), vec![2, 4, 4, 4]),
            (Box::new(nn::AvgPool2d::new(2, 2, 0)), vec![2, 4, 4, 4]),
            (
                Box::new(nn::AdaptiveAvgPool2d::new([1, 1])),
                vec![2, 4, 1, 1],
            ),
            (Box::new(nn::Flatten::default()), vec![2, 256]),
            (Box::new(nn::Dropout::new(0.5)?), vec![2, 4, 8, 8]),
            (
                Box::new(nn::Activation::GELU { tanh: false }),
                vec![2, 4, 8, 8],
            ),
        ])
    });
    // Dropout draws its mask from the default generator: under the seed lock.
    let shapes: Vec<(Vec<usize>, &str)> = seeded(|| {
        cases
            .iter()
            .map(|(m, _)| Ok((m.forward(&x4)?.shape().to_vec(), m.type_name())))
            .collect()
    });
    for ((got, name), (_, want)) in shapes.iter().zip(&cases) {
        assert_eq!(got, want, "{name}");
    }
    // Per-dim kernel, stride and padding: (8 + 2 - 2) / 2 + 1 = 5 rows, 8 - 3 + 1 = 6 cols.
    let options = nn::ConvOptions {
        stride: [2, 1],
        padding: [1, 0],
        ..Default::default()
    };
    let conv = seeded(|| nn::Conv2d::with(4, 3, [2, 3], options));
    assert_eq!(&*conv.forward(&x4).unwrap().shape(), &[2, 3, 5, 6]);
    let emb = seeded(|| nn::Embedding::new(5, 3));
    let idx = Variable::from_tensor(Tensor::from_vec(vec![0i64, 4, 4], &[3]).unwrap());
    assert_eq!(&*emb.forward(&idx).unwrap().shape(), &[3, 3]);
    let conv1d = seeded(|| nn::Conv1d::new(4, 2, 3));
    let x3 = Variable::from_tensor(Tensor::ones(&[2, 4, 8], DType::F32).unwrap());
    assert_eq!(&*conv1d.forward(&x3).unwrap().shape(), &[2, 2, 6]);
    // Evaluation mode: dropout is the identity.
    let dropout = nn::Dropout::new(0.5).unwrap();
    dropout.eval();
    assert_eq!(
        dropout.forward(&x4).unwrap().to_vec::<f32>(),
        x4.to_vec::<f32>()
    );
    assert!(nn::Dropout::new(1.5).is_err());
    let bn = nn::BatchNorm2d::new(4).unwrap();
    assert_eq!(
        bn.forward(&x3).unwrap_err().to_string(),
        "expected 4D input (got 3D input)"
    );
}

#[test]
fn losses_match_pytorch() {
    // torch.nn.functional on these inputs (PyTorch 2.15, float32).
    let logits = Variable::from_slice(&[1.0f32, 2.0, 0.5, -1.0, 0.0, 3.0], &[2, 3]).unwrap();
    let target = Variable::from_tensor(Tensor::from_vec(vec![1i64, 2], &[2]).unwrap());
    let ce = nn::cross_entropy(&logits, &target)
        .unwrap()
        .item()
        .unwrap()
        .to_f64();
    assert!((ce - 0.265_126_35).abs() < 1e-6, "{ce}");
    let logp = logits.log_softmax(1).unwrap();
    let nll = nn::nll_loss(&logp, &target)
        .unwrap()
        .item()
        .unwrap()
        .to_f64();
    assert!((nll - ce).abs() < 1e-7);
    let t = Variable::from_slice(&[0.0f32, 1.0, 1.0, 0.0, 0.5, 1.0], &[2, 3]).unwrap();
    let mse = nn::mse_loss(&logits, &t).unwrap().item().unwrap().to_f64();
    assert!((mse - 1.25).abs() < 1e-6, "{mse}");
    let bce = nn::binary_cross_entropy_with_logits(&logits, &t)
        .unwrap()
        .item()
        .unwrap()
        .to_f64();
    assert!((bce - 0.494_877_2).abs() < 1e-6, "{bce}");
}

#[test]
fn batch_norm_with_momentum_none_keeps_a_cumulative_average() {
    let mut bn = nn::BatchNorm1d::new(2).unwrap();
    bn.momentum = None;
    let batches = [
        [1.0f32, 10.0, 3.0, 20.0, 5.0, 60.0, 7.0, 30.0],
        [0.0f32, -4.0, 2.0, 4.0, 4.0, 8.0, 10.0, 0.0],
    ];
    let mut means = Vec::new();
    let mut vars = Vec::new();
    for b in &batches {
        let x = Variable::from_slice(b, &[4, 2]).unwrap();
        bn.forward(&x).unwrap();
        for c in 0..2 {
            let col: Vec<f64> = (0..4).map(|r| b[2 * r + c] as f64).collect();
            let mean = col.iter().sum::<f64>() / 4.0;
            means.push(mean);
            vars.push(col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 3.0);
        }
    }
    // Factor 1 for the first batch and 1/2 for the second: the plain average.
    let rm = bn.running_mean.to_vec::<f32>();
    let rv = bn.running_var.to_vec::<f32>();
    for c in 0..2 {
        assert!((rm[c] as f64 - (means[c] + means[2 + c]) / 2.0).abs() < 1e-5);
        assert!((rv[c] as f64 - (vars[c] + vars[2 + c]) / 2.0).abs() < 1e-3);
    }
    assert_eq!(bn.num_batches_tracked.to_vec::<i64>(), [2]);
}

#[test]
fn embedding_padding_row_starts_at_zero_and_gets_no_gradient() {
    let emb = seeded(|| nn::Embedding::with_padding_idx(4, 3, Some(2)));
    assert_eq!(emb.weight.to_vec::<f32>()[6..9], [0.0; 3]);
    let idx = Variable::from_tensor(Tensor::from_vec(vec![2i64, 0, 2], &[3]).unwrap());
    emb.forward(&idx)
        .unwrap()
        .sum()
        .unwrap()
        .backward()
        .unwrap();
    let grad = emb.weight.grad().unwrap().to_vec::<f32>();
    assert_eq!(grad[..3], [1.0; 3]);
    assert_eq!(grad[6..9], [0.0; 3]);
    assert!(nn::Embedding::with_padding_idx(4, 3, Some(4)).is_err());
}

#[test]
fn to_dtype_converts_floating_parameters_and_buffers_in_place() {
    let model = seeded(|| ResNet::with_widths(Block::Basic, [1, 1, 1, 1], [2, 2, 4, 4], 3));
    let before = model.fc.weight.to_vec::<f32>();
    let held = model.parameters();
    model.to_dtype(DType::F64).unwrap();
    let sd = model.state_dict();
    assert_eq!(sd.get("fc.weight").unwrap().dtype(), DType::F64);
    assert_eq!(sd.get("bn1.running_var").unwrap().dtype(), DType::F64);
    assert_eq!(
        sd.get("bn1.num_batches_tracked").unwrap().dtype(),
        DType::I64
    );
    // Same parameters (an optimizer built before still holds them), exact widening.
    assert!(held.iter().zip(model.parameters()).all(|(a, b)| a.same(&b)));
    let widened: Vec<f64> = before.iter().map(|&v| v as f64).collect();
    assert_eq!(model.fc.weight.to_vec::<f64>(), widened);
    let x = Variable::from_tensor(Tensor::ones(&[1, 3, 32, 32], DType::F64).unwrap());
    assert_eq!(model.forward(&x).unwrap().dtype(), DType::F64);
    let err = model.to_dtype(DType::I64).unwrap_err().to_string();
    assert!(
        err.contains("only accepts floating point or complex dtypes"),
        "{err}"
    );
}
