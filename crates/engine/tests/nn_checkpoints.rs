//! Checkpoints shared with the Python package (Note [Rust modules]). The fixtures in
//! tests/vectors were written by `tests/vectors/generate_rust_nn_checkpoints.py` (the
//! Python package: LeNet and a width-reduced ResNet trained three SGD steps from seed 0)
//! and by `examples/nn_fixtures.rs` (the same in Rust); `tests/python/test_rust_nn.py`
//! loads the Rust-written ones in Python.

use rustgrad::models::lenet;
use rustgrad::nn::{self, Module, StateDict};
use rustgrad::serialize::RawTensor;
use rustgrad::{DType, Tensor, Variable};
use std::sync::Mutex;

static SEED: Mutex<()> = Mutex::new(());

fn fixture(name: &str) -> String {
    format!(
        "{}/../../tests/vectors/rust_nn_from_{name}.safetensors",
        env!("CARGO_MANIFEST_DIR")
    )
}

fn bits(t: &Tensor) -> RawTensor {
    RawTensor::from_tensor("", t)
}

fn model(name: &str) -> Box<dyn Module> {
    match name {
        "lenet" => Box::new(lenet(10).unwrap()),
        _ => Box::new(nn_fixtures::small_resnet().unwrap()),
    }
}

fn classes(name: &str) -> usize {
    if name == "lenet" {
        10
    } else {
        5
    }
}

#[allow(dead_code)] // the example's `main` and helpers
#[path = "../examples/nn_fixtures.rs"]
mod nn_fixtures;

/// Whether the fixture `io` (an `_io` file) was computed with this CPU's GEMM kernel
/// family: then results must match bit for bit; across families only to rounding.
fn same_simd(io: &StateDict) -> bool {
    let stored = io.get("simd").expect("simd entry").to_vec::<u8>();
    stored == nn_fixtures::simd_path().as_bytes()
}

/// `a` and `b` bit for bit when `exact`, else within float32 rounding of another
/// GEMM kernel family.
fn assert_close(a: &Tensor, b: &Tensor, exact: bool, what: &str) {
    if exact || a.dtype() != DType::F32 {
        assert_eq!(bits(a), bits(b), "{what}");
        return;
    }
    let (a, b) = (a.to_vec::<f32>(), b.to_vec::<f32>());
    assert_eq!(a.len(), b.len(), "{what}");
    for (x, y) in a.iter().zip(&b) {
        assert!(
            (x - y).abs() <= 1e-4 * (1.0 + y.abs()),
            "{what}: {x} vs {y}"
        );
    }
}

#[test]
fn checkpoints_saved_by_python_load_by_name_and_give_bit_identical_logits() {
    for name in ["lenet", "resnet"] {
        // Building draws from the default generator, which the other test seeds.
        let model = {
            let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
            model(name)
        };
        let state = nn::load_file(fixture(&format!("python_{name}"))).unwrap();
        model.load_state_dict(&state, true).unwrap();
        model.eval();
        let io = nn::load_file(fixture(&format!("python_{name}_io"))).unwrap();
        let input = Variable::from_tensor(io.get("input").unwrap().clone());
        let logits = model.forward(&input).unwrap();
        let exact = same_simd(&io);
        assert_close(&logits.tensor(), io.get("logits").unwrap(), exact, name);
        // The model's own state dict is the file's, entry for entry.
        let own = model.state_dict();
        assert_eq!(
            own.keys().collect::<Vec<_>>(),
            state.keys().collect::<Vec<_>>()
        );
        for ((k, a), (_, b)) in own.iter().zip(state.iter()) {
            assert_eq!(bits(a), bits(b), "{name}: {k}");
        }
    }
}

#[test]
fn the_same_seed_and_training_in_rust_give_the_python_packages_weights_bit_for_bit() {
    for name in ["lenet", "resnet"] {
        let (model, (input, logits)) = {
            let _lock = SEED.lock().unwrap_or_else(|e| e.into_inner());
            rustgrad::manual_seed(0);
            let model = model(name);
            let probe = nn_fixtures::train_and_probe(&*model, classes(name)).unwrap();
            (model, probe)
        };
        let state = model.state_dict();
        let simd = nn_fixtures::simd_path();
        let simd = Tensor::from_vec(simd.as_bytes().to_vec(), &[simd.len()]).unwrap();
        let io: StateDict = [
            ("input".into(), input),
            ("logits".into(), logits),
            ("simd".into(), simd),
        ]
        .into_iter()
        .collect();
        // The Rust-written fixture is what this code writes now (not stale), where it
        // was written with this CPU's kernel family...
        let rust_io = nn::load_file(fixture(&format!("rust_{name}_io"))).unwrap();
        if same_simd(&rust_io) {
            let bytes = nn::state_dict_to_bytes(&state).unwrap();
            let committed = std::fs::read(fixture(&format!("rust_{name}"))).unwrap();
            assert!(bytes == committed, "{name}: rerun examples/nn_fixtures.rs");
            let io_bytes = nn::state_dict_to_bytes(&io).unwrap();
            let committed = std::fs::read(fixture(&format!("rust_{name}_io"))).unwrap();
            assert!(
                io_bytes == committed,
                "{name}: rerun examples/nn_fixtures.rs"
            );
        }
        // ...and the trained weights and logits are those the Python package got.
        let python = nn::load_file(fixture(&format!("python_{name}"))).unwrap();
        let python_io = nn::load_file(fixture(&format!("python_{name}_io"))).unwrap();
        let exact = same_simd(&python_io);
        for ((k, a), (_, b)) in state.iter().zip(python.iter()) {
            assert_close(a, b, exact, &format!("{name}: {k} after training"));
        }
        for key in ["input", "logits"] {
            let what = format!("{name}: {key}");
            assert_close(
                io.get(key).unwrap(),
                python_io.get(key).unwrap(),
                exact,
                &what,
            );
        }
    }
}

/// A checkpoint in the Python package's format with `structure` as its header's
/// structure and a valid checksum over it (the checksum detects corruption, not an
/// attacker: a hostile file recomputes it), holding `entries`.
fn signed(structure: &str, entries: &[RawTensor]) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let mut sorted: Vec<&RawTensor> = entries.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    let mut digest = Sha256::new();
    digest.update(structure.as_bytes());
    for t in sorted {
        let dims: Vec<String> = t.shape.iter().map(usize::to_string).collect();
        let shape = match dims.len() {
            0 => "()".to_string(),
            1 => format!("({},)", dims[0]),
            _ => format!("({})", dims.join(", ")),
        };
        digest.update(format!("\0{}\0{}\0{shape}\0", t.name, t.dtype.torch_name()).as_bytes());
        digest.update(&t.data);
    }
    let checksum: String = digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let metadata = [
        ("format", "pt".to_string()),
        ("rustgrad", structure.to_string()),
        ("rustgrad_sha256", checksum),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    rustgrad::serialize::to_safetensors(entries, metadata).unwrap()
}

fn raw(name: &str, values: &[f32], shape: &[usize]) -> RawTensor {
    RawTensor {
        name: name.into(),
        dtype: DType::F32,
        shape: shape.to_vec(),
        data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

#[test]
fn hostile_structures_with_valid_checksums_are_errors_never_panics() {
    let flat = raw("w.__storage__", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[6]);
    let view = |shape: &str, stride: &str, offset: &str| {
        format!(
            r#"{{"odict":[["w",{{"requires_grad":false,"parameter":false,"tensor":"w.__storage__","shape":{shape},"stride":{stride},"offset":{offset}}}]]}}"#
        )
    };
    // A legitimate view of shared storage: the transpose of a 2x3 block.
    let ok = signed(&view("[3,2]", "[1,3]", "0"), std::slice::from_ref(&flat));
    let sd = nn::load_state_dict_bytes(&ok).unwrap();
    assert_eq!(
        sd.get("w").unwrap().to_vec::<f32>(),
        [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]
    );
    let hostile = [
        view("[3,2]", "[1,3]", "1"),                             // past the end
        view("[4611686018427387904,4]", "[1,1]", "0"),           // numel overflow
        view("[2,2]", "[4611686018427387904,1]", "0"),           // extent overflow
        view("[2]", "[1]", "-1"),                                // negative offset
        view("[2,2]", "[1]", "0"),                               // rank mismatch
        view("[2.5]", "[1]", "0"),                               // not integers
        view("\"x\"", "[1]", "0"),                               // not a list
        r#"{"odict":[["w",{"tensor":"missing"}]]}"#.to_string(), // no such entry
        r#"{"odict":[["w",{"requires_grad":false}]]}"#.to_string(), // no tensor
        r#"{"odict":[["w"]]}"#.to_string(),                      // not a pair
        r#"{"odict":[[1,{"tensor":"w.__storage__"}]]}"#.to_string(), // key not a string
        r#"{"list":[]}"#.to_string(),                            // not a dict
        r#"{"odict":{"w":1}}"#.to_string(),                      // not a list
        "[".repeat(100_000),                                     // deep nesting
        "not json".to_string(),
    ];
    for structure in hostile {
        let bytes = signed(&structure, std::slice::from_ref(&flat));
        assert!(
            nn::load_state_dict_bytes(&bytes).is_err(),
            "{:.80}",
            structure
        );
    }
    // A checksum for other contents is refused.
    let mut tampered = ok.clone();
    let last = tampered.len() - 1;
    tampered[last] ^= 0x40;
    let err = nn::load_state_dict_bytes(&tampered)
        .unwrap_err()
        .to_string();
    assert!(err.contains("checksum mismatch"), "{err}");
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Vec<u8> {
        let mut sd = StateDict::new();
        sd.insert(
            "a.weight",
            Tensor::from_vec(vec![1.0f32, -2.0, 3.5], &[3]).unwrap(),
        );
        sd.insert("a.count", Tensor::from_vec(vec![7i64], &[]).unwrap());
        nn::state_dict_to_bytes(&sd).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Random overwrites, insertions and deletions anywhere in a checkpoint: an
        /// error or a state dict, never a panic.
        #[test]
        fn mutated_checkpoints_never_panic(
            edits in proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 1..8)
        ) {
            let mut bytes = sample();
            for (at, byte, kind) in edits {
                let at = at as usize % (bytes.len() + 1);
                match kind {
                    0 if at < bytes.len() => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ if at < bytes.len() => { bytes.remove(at); }
                    _ => {}
                }
            }
            let _ = nn::load_state_dict_bytes(&bytes);
        }
    }
}
