//! ONNX import from Rust (`rustgrad::onnx`, Note [ONNX import from Rust]): the
//! committed fixtures exported by PyTorch (tests/vectors/generate_onnx_fixtures.py) give
//! PyTorch's outputs and input gradients, an imported network is fine-tuned with a new
//! head, and hostile files -- mutated fixtures (bit flips, truncations, splices) and
//! hand-made ones (huge dims, cycles, unknown ops, external data outside the folder) --
//! are errors, never panics or hangs.

use rustgrad::nn::{self, Module};
use rustgrad::onnx::{self, load_model, load_model_bytes, OnnxModel};
use rustgrad::optim::Sgd;
use rustgrad::{DType, Error, Tensor, Variable};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/../../tests/vectors/onnx/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

// ----- reading the fixtures' .npz files (numpy's `savez`: stored zip records) ---------

/// The float32 arrays of an `.npz` written by `np.savez` (stored records, local headers
/// followed directly by the `.npy` bytes).
fn read_npz(path: &Path) -> HashMap<String, Tensor> {
    let bytes = std::fs::read(path).unwrap();
    let u16_at = |p: usize| u16::from_le_bytes([bytes[p], bytes[p + 1]]) as usize;
    let mut out = HashMap::new();
    let mut pos = 0;
    while bytes[pos..].starts_with(b"PK\x03\x04") {
        assert_eq!(u16_at(pos + 8), 0, "compressed npz record");
        let name_len = u16_at(pos + 26);
        let extra_len = u16_at(pos + 28);
        let name = std::str::from_utf8(&bytes[pos + 30..pos + 30 + name_len]).unwrap();
        let npy = pos + 30 + name_len + extra_len;
        assert_eq!(&bytes[npy..npy + 6], b"\x93NUMPY");
        let header_len = u16_at(npy + 8);
        let header = std::str::from_utf8(&bytes[npy + 10..npy + 10 + header_len]).unwrap();
        assert!(header.contains("'descr': '<f4'"), "{header}");
        let shape_text = header.split("'shape': (").nth(1).unwrap();
        let shape: Vec<usize> = shape_text[..shape_text.find(')').unwrap()]
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().unwrap())
            .collect();
        let numel: usize = shape.iter().product();
        let data = npy + 10 + header_len;
        let values: Vec<f32> = bytes[data..data + 4 * numel]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let key = name.trim_end_matches(".npy").to_string();
        out.insert(key, Tensor::from_vec(values, &shape).unwrap());
        pos = data + 4 * numel;
    }
    assert!(!out.is_empty());
    out
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what} {i}: {g} vs PyTorch's {w}"
        );
    }
}

/// The fixture's output and the gradient of `sum(output * cotangent)` with respect to
/// the input, against PyTorch's.
fn check_fixture(name: &str) -> OnnxModel {
    let model = load_model(fixture(&format!("{name}.onnx"))).unwrap();
    let io = read_npz(&fixture(&format!("{name}_io.npz")));
    let x = Variable::new(io["input"].clone(), true).unwrap();
    let y = model.forward(&x).unwrap();
    assert_eq!(&*y.shape(), io["output"].shape(), "{name}: output shape");
    assert_close(&y.to_vec::<f32>(), &io["output"].to_vec::<f32>(), name);
    let cot = Variable::from_tensor(io["cotangent"].clone());
    y.mul(&cot).unwrap().sum().unwrap().backward().unwrap();
    assert_close(
        &x.grad().unwrap().to_vec::<f32>(),
        &io["input_grad"].to_vec::<f32>(),
        &format!("{name} input gradient"),
    );
    model
}

#[test]
fn mlp_fixture_gives_pytorchs_output_and_gradient() {
    let model = check_fixture("mlp");
    let ops: Vec<&str> = model.nodes().iter().map(|n| n.op_type.as_str()).collect();
    assert!(
        ops.contains(&"BatchNormalization") && ops.contains(&"Softmax"),
        "{ops:?}"
    );
    // Floating initializers are trainable parameters under sanitised names.
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(names.contains(&"fc1_weight".to_string()), "{names:?}");
    assert!(model.parameters().iter().all(|p| p.requires_grad()));
    // Its state dict round-trips through the checkpoint format into a fresh import.
    let bytes = nn::state_dict_to_bytes(&model.state_dict()).unwrap();
    let fresh = load_model(fixture("mlp.onnx")).unwrap();
    for p in fresh.parameters() {
        let _guard = rustgrad::autograd::no_grad();
        p.mul_(&Variable::from_tensor(Tensor::scalar(0.0, DType::F32)))
            .unwrap();
    }
    fresh
        .load_state_dict(&nn::load_state_dict_bytes(&bytes).unwrap(), true)
        .unwrap();
    let x = Variable::from_tensor(read_npz(&fixture("mlp_io.npz"))["input"].clone());
    assert_eq!(
        fresh.forward(&x).unwrap().to_vec::<f32>(),
        model.forward(&x).unwrap().to_vec::<f32>()
    );
}

#[test]
fn lenet_fixture_gives_pytorchs_output_and_gradient() {
    check_fixture("lenet");
}

#[test]
fn resnet18_small_fixture_gives_pytorchs_output_and_gradient() {
    check_fixture("resnet18_small");
}

#[test]
fn misc_fixture_gives_pytorchs_output_and_gradient() {
    check_fixture("misc");
}

#[test]
fn lstm_fixture_gives_pytorchs_output_and_gradient() {
    check_fixture("lstm");
}

#[test]
fn a_frozen_imported_cnn_is_fine_tuned_with_a_new_head() {
    rustgrad::manual_seed(0);
    let mut model = load_model(fixture("lenet.onnx")).unwrap();
    model.requires_grad_(false).unwrap();
    let frozen: Vec<(String, Vec<f32>)> = model
        .named_parameters()
        .into_iter()
        .map(|(n, p)| (n, p.to_vec::<f32>()))
        .collect();
    // Labels the frozen features can express: which of the old head's first three
    // logits is largest.
    let x = Variable::from_tensor(rustgrad::random::randn(&[16, 1, 28, 28], DType::F32).unwrap());
    let logits = model.forward(&x).unwrap().to_vec::<f32>();
    let labels: Vec<i64> = logits
        .chunks(10)
        .map(|row| (0..3).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap() as i64)
        .collect();
    let last = model
        .nodes()
        .iter()
        .rev()
        .find(|n| n.op_type == "Gemm")
        .unwrap()
        .name
        .clone();
    model
        .replace_node(&last, nn::Linear::new(32, 3).unwrap())
        .unwrap();
    assert!(model
        .replace_node("no such node", nn::Identity::default())
        .is_err());
    let trainable: Vec<(String, Variable)> = model
        .named_parameters()
        .into_iter()
        .filter(|(_, p)| p.requires_grad())
        .collect();
    let names: Vec<&str> = trainable.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("replaced_")),
        "{names:?}"
    );
    let y = Variable::from_tensor(Tensor::from_vec(labels, &[x.shape()[0]]).unwrap());
    let params: Vec<Variable> = trainable.into_iter().map(|(_, p)| p).collect();
    let mut sgd = Sgd::new(params, 0.5).unwrap().with_momentum(0.9);
    let mut losses = Vec::new();
    for _ in 0..20 {
        sgd.zero_grad().unwrap();
        let loss = nn::cross_entropy(&model.forward(&x).unwrap(), &y).unwrap();
        losses.push(loss.item().unwrap().to_f64());
        loss.backward().unwrap();
        sgd.step().unwrap();
    }
    assert!(
        losses.last().unwrap() < &(0.5 * losses[0]),
        "loss did not decrease: {losses:?}"
    );
    for (name, before) in frozen {
        let now = model
            .named_parameters()
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        assert_eq!(now.to_vec::<f32>(), before, "frozen {name} changed");
        assert!(now.grad().is_none(), "frozen {name} got a gradient");
    }
    // The new head is in the state dict under its module name.
    let keys: Vec<String> = model.state_dict().keys().map(String::from).collect();
    assert!(keys
        .iter()
        .any(|k| k.ends_with(".weight") && k.starts_with("replaced_")));
}

// ----- hostile files -------------------------------------------------------------------

/// A deterministic generator (SplitMix64) for the mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, base: &[u8], donors: &[Vec<u8>]) -> Vec<u8> {
    let mut b = base.to_vec();
    match rng.below(7) {
        0 => {
            // Flip 1-8 bits.
            for _ in 0..1 + rng.below(8) {
                let i = rng.below(b.len());
                b[i] ^= 1 << rng.below(8);
            }
        }
        1 => b.truncate(rng.below(b.len())),
        2 => {
            // Splice a run of another fixture in.
            let donor = &donors[rng.below(donors.len())];
            let (s, len) = (rng.below(donor.len()), 1 + rng.below(64));
            let run = &donor[s..(s + len).min(donor.len())];
            let at = rng.below(b.len());
            let end = (at + rng.below(64)).min(b.len());
            b.splice(at..end, run.iter().copied());
        }
        3 => {
            // Maximal varint bytes (huge lengths, dims and counts).
            let at = rng.below(b.len());
            for i in at..(at + 1 + rng.below(10)).min(b.len()) {
                b[i] = 0xff;
            }
        }
        4 => {
            // Random bytes overwritten.
            let at = rng.below(b.len());
            for i in at..(at + 1 + rng.below(16)).min(b.len()) {
                b[i] = rng.next() as u8;
            }
        }
        5 => {
            // A run duplicated (repeated fields, doubled definitions).
            let s = rng.below(b.len());
            let e = (s + 1 + rng.below(256)).min(b.len());
            let run = b[s..e].to_vec();
            let at = rng.below(b.len());
            b.splice(at..at, run);
        }
        _ => {
            // A small value written over a byte (lengths and tags shrunk).
            let i = rng.below(b.len());
            b[i] = rng.below(16) as u8;
        }
    }
    b
}

/// Loads `bytes` (and, when that works and `input` is given, runs the model) under
/// `catch_unwind`: any outcome but a panic is fine.
fn survives(bytes: &[u8], input: Option<&Variable>) -> bool {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Ok(model) = load_model_bytes(bytes) {
            if let Some(x) = input {
                let _ = model.run(std::slice::from_ref(x));
            }
        }
    }))
    .is_ok()
}

#[test]
fn mutated_fixtures_are_errors_never_panics_or_hangs() {
    let names = ["mlp", "misc", "lenet", "lstm", "resnet18_small"];
    let files: Vec<Vec<u8>> = names
        .iter()
        .map(|n| std::fs::read(fixture(&format!("{n}.onnx"))).unwrap())
        .collect();
    let inputs: Vec<Variable> = names
        .iter()
        .map(|n| Variable::from_tensor(read_npz(&fixture(&format!("{n}_io.npz")))["input"].clone()))
        .collect();
    // Silence the default hook's messages: a panic fails the test below anyway.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = Rng(0x5eed);
    let mut failures = Vec::new();
    let start = Instant::now();
    let mut cases = 0;
    let mut loaded = 0;
    // RUSTGRAD_ONNX_FUZZ_SCALE=N runs N times the cases, every model's forward included
    // (a longer search by hand, in an optimised build).
    let scale: usize = std::env::var("RUSTGRAD_ONNX_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for (k, file) in files.iter().enumerate() {
        // The small models also run on their input after a successful load; the larger
        // ones are only loaded (their forward passes would dominate the time).
        let run = k < 2 || scale > 1;
        let count = scale * if k < 3 { 800 } else { 200 };
        for case in 0..count {
            let bytes = mutate(&mut rng, file, &files);
            let t0 = Instant::now();
            if load_model_bytes(&bytes).is_ok() {
                loaded += 1;
            }
            if !survives(&bytes, run.then_some(&inputs[k])) {
                failures.push(format!("{} case {case}", names[k]));
                std::fs::write(std::env::temp_dir().join("onnx_fuzz_failure.onnx"), &bytes).ok();
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{} case {case} took {:?}",
                names[k],
                t0.elapsed()
            );
            cases += 1;
        }
    }
    // Every prefix of the small MLP (each truncation point).
    for len in 0..files[0].len() {
        if !survives(&files[0][..len], Some(&inputs[0])) {
            failures.push(format!("mlp truncated to {len}"));
        }
        cases += 1;
    }
    // Every single-bit flip of the small misc model (17,000 files), loaded (the random
    // flips above run their models).
    for bit in 0..8 * files[1].len() {
        let mut flipped = files[1].clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        if !survives(&flipped, None) {
            failures.push(format!("misc with bit {bit} flipped"));
        }
        cases += 1;
    }
    std::panic::set_hook(hook);
    assert!(failures.is_empty(), "panics: {failures:?}");
    // Some mutations keep a valid file (a flipped weight bit) and many do not.
    assert!(loaded > 100 && loaded < cases, "{loaded} of {cases} loaded");
    assert!(
        start.elapsed() < Duration::from_secs(120 * scale as u64),
        "{:?}",
        start.elapsed()
    );
}

// ----- hand-made hostile files ---------------------------------------------------------

/// A minimal protobuf writer for hand-made ONNX files.
mod pb {
    pub fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    pub fn int(field: u64, v: i64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(field << 3, &mut out);
        varint(v as u64, &mut out);
        out
    }

    pub fn bytes(field: u64, b: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint((field << 3) | 2, &mut out);
        varint(b.len() as u64, &mut out);
        out.extend_from_slice(b);
        out
    }

    /// Field `field` wrapped around itself `depth` times (built outside in, linear).
    pub fn nested(field: u64, depth: usize) -> Vec<u8> {
        let mut headers: Vec<Vec<u8>> = Vec::with_capacity(depth);
        let mut inner = 0usize;
        for _ in 0..depth {
            let mut h = Vec::new();
            varint((field << 3) | 2, &mut h);
            varint(inner as u64, &mut h);
            inner += h.len();
            headers.push(h);
        }
        headers.into_iter().rev().flatten().collect()
    }

    pub fn cat(parts: &[Vec<u8>]) -> Vec<u8> {
        parts.concat()
    }

    /// TensorProto: dims, data_type, name, then `extra` fields.
    pub fn tensor(name: &str, dims: &[i64], data_type: i64, extra: &[Vec<u8>]) -> Vec<u8> {
        let mut out: Vec<Vec<u8>> = dims.iter().map(|&d| int(1, d)).collect();
        out.push(int(2, data_type));
        out.push(bytes(8, name.as_bytes()));
        out.extend(extra.iter().cloned());
        cat(&out)
    }

    pub fn raw(data: &[u8]) -> Vec<u8> {
        bytes(9, data)
    }

    pub fn f32_raw(values: &[f32]) -> Vec<u8> {
        raw(&values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>())
    }

    pub fn external(entries: &[(&str, &str)]) -> Vec<u8> {
        let mut out: Vec<Vec<u8>> = entries
            .iter()
            .map(|(k, v)| bytes(13, &cat(&[bytes(1, k.as_bytes()), bytes(2, v.as_bytes())])))
            .collect();
        out.push(int(14, 1));
        cat(&out)
    }

    /// AttributeProto.
    pub fn attr_int(name: &str, v: i64) -> Vec<u8> {
        cat(&[bytes(1, name.as_bytes()), int(20, 2), int(3, v)])
    }

    pub fn attr_graph(name: &str, graph: &[u8]) -> Vec<u8> {
        cat(&[bytes(1, name.as_bytes()), int(20, 5), bytes(6, graph)])
    }

    pub fn attr_tensor(name: &str, t: &[u8]) -> Vec<u8> {
        cat(&[bytes(1, name.as_bytes()), int(20, 4), bytes(5, t)])
    }

    /// NodeProto.
    pub fn node(op: &str, inputs: &[&str], outputs: &[&str], attrs: &[Vec<u8>]) -> Vec<u8> {
        let mut out: Vec<Vec<u8>> = inputs.iter().map(|i| bytes(1, i.as_bytes())).collect();
        out.extend(outputs.iter().map(|o| bytes(2, o.as_bytes())));
        out.push(bytes(
            3,
            format!("{op}_{}", outputs.first().unwrap_or(&"")).as_bytes(),
        ));
        out.push(bytes(4, op.as_bytes()));
        out.extend(attrs.iter().map(|a| bytes(5, a)));
        cat(&out)
    }

    pub fn value_info(name: &str) -> Vec<u8> {
        bytes(1, name.as_bytes())
    }

    /// GraphProto.
    pub fn graph(
        nodes: &[Vec<u8>],
        inits: &[Vec<u8>],
        inputs: &[&str],
        outputs: &[&str],
    ) -> Vec<u8> {
        let mut out: Vec<Vec<u8>> = nodes.iter().map(|n| bytes(1, n)).collect();
        out.extend(inits.iter().map(|t| bytes(5, t)));
        out.extend(inputs.iter().map(|i| bytes(11, &value_info(i))));
        out.extend(outputs.iter().map(|o| bytes(12, &value_info(o))));
        cat(&out)
    }

    /// ModelProto at IR 8, opset 17.
    pub fn model(graph: &[u8]) -> Vec<u8> {
        let opset = cat(&[bytes(1, b""), int(2, 17)]);
        cat(&[int(1, 8), bytes(8, &opset), bytes(7, graph)])
    }
}

fn err_text(bytes: &[u8]) -> String {
    match load_model_bytes(bytes) {
        Ok(_) => panic!("a hostile model loaded"),
        Err(e) => e.to_string(),
    }
}

fn assert_err(bytes: &[u8], phrase: &str) {
    let text = err_text(bytes);
    assert!(text.contains(phrase), "expected '{phrase}' in: {text}");
}

/// `y = relu(x @ w)` with `w` given by `init`.
fn matmul_model(init: &[u8]) -> Vec<u8> {
    pb::model(&pb::graph(
        &[
            pb::node("MatMul", &["x", "w"], &["h"], &[]),
            pb::node("Relu", &["h"], &["y"], &[]),
        ],
        &[init.to_vec()],
        &["x"],
        &["y"],
    ))
}

#[test]
fn the_hand_made_writer_makes_a_model_that_runs() {
    let w = pb::tensor("w", &[2, 2], 1, &[pb::f32_raw(&[1.0, -1.0, 2.0, 0.5])]);
    let model = load_model_bytes(&matmul_model(&w)).unwrap();
    let x = Variable::from_tensor(Tensor::from_vec(vec![1.0f32, 1.0], &[1, 2]).unwrap());
    // relu([1 + 2, -1 + 0.5]) = [3, 0]
    assert_eq!(model.forward(&x).unwrap().to_vec::<f32>(), vec![3.0, 0.0]);
    assert_eq!(model.input_names(), ["x"]);
    assert!(onnx::supported_ops().contains(&"Gemm"));
}

#[test]
fn hostile_initializers_are_refused_before_allocating() {
    // Dims whose product overflows, dims far above the element limit, a negative dim.
    let huge = pb::tensor("w", &[1 << 40, 1 << 40, 1 << 40], 1, &[]);
    assert_err(&matmul_model(&huge), "too many elements");
    let big = pb::tensor("w", &[1 << 20, 1 << 12], 1, &[pb::f32_raw(&[1.0])]);
    assert_err(&matmul_model(&big), "too many elements");
    let negative = pb::tensor("w", &[2, -2], 1, &[]);
    assert_err(&matmul_model(&negative), "negative dimension");
    // Raw data that does not match the dims, typed data of the wrong count.
    let short = pb::tensor("w", &[2, 2], 1, &[pb::f32_raw(&[1.0, 2.0, 3.0])]);
    assert_err(&matmul_model(&short), "raw data has 12 bytes, expected 16");
    let typed = pb::tensor("w", &[2, 2], 7, &[pb::int(7, 1), pb::int(7, 2)]);
    assert_err(&matmul_model(&typed), "holds 2 values, expected 4");
    // Unsupported element types.
    assert_err(
        &matmul_model(&pb::tensor("w", &[1], 8, &[])),
        "string tensors",
    );
    assert_err(
        &matmul_model(&pb::tensor("w", &[1], 99, &[])),
        "unsupported data type 99",
    );
    // An initializer defined twice.
    let w = pb::tensor("w", &[1], 1, &[pb::f32_raw(&[1.0])]);
    let twice = pb::model(&pb::graph(
        &[pb::node("Relu", &["w"], &["y"], &[])],
        &[w.clone(), w],
        &[],
        &["y"],
    ));
    assert_err(&twice, "defined twice");
}

#[test]
fn hostile_graphs_are_refused_at_load() {
    let x = ["x"];
    // A cycle: a reads b's output and b reads a's.
    let cycle = pb::model(&pb::graph(
        &[
            pb::node("Add", &["x", "q"], &["p"], &[]),
            pb::node("Relu", &["p"], &["q"], &[]),
        ],
        &[],
        &x,
        &["q"],
    ));
    assert_err(&cycle, "cycle");
    // A value nothing produces.
    let undefined = pb::model(&pb::graph(
        &[pb::node("Relu", &["nope"], &["y"], &[])],
        &[],
        &x,
        &["y"],
    ));
    assert_err(&undefined, "which no node, input or initializer produces");
    // A value produced twice, and an input overwritten.
    let twice = pb::model(&pb::graph(
        &[
            pb::node("Relu", &["x"], &["y"], &[]),
            pb::node("Tanh", &["x"], &["y"], &[]),
        ],
        &[],
        &x,
        &["y"],
    ));
    assert_err(&twice, "produced twice");
    let shadow = pb::model(&pb::graph(
        &[pb::node("Relu", &["x"], &["x"], &[])],
        &[],
        &x,
        &["x"],
    ));
    assert_err(&shadow, "produced twice");
    // An output never produced; no outputs at all; no graph.
    let missing = pb::model(&pb::graph(
        &[pb::node("Relu", &["x"], &["y"], &[])],
        &[],
        &x,
        &["z"],
    ));
    assert_err(&missing, "never produced");
    assert_err(&pb::model(&pb::graph(&[], &[], &x, &[])), "no outputs");
    assert_err(&pb::int(1, 8), "has no graph");
    assert_err(b"", "has no graph");
    // Unknown ops and domains are named, as NotImplemented.
    let unknown = pb::model(&pb::graph(
        &[pb::node("FancyOp", &["x"], &["y"], &[])],
        &[],
        &x,
        &["y"],
    ));
    let err = load_model_bytes(&unknown).err().unwrap();
    assert!(matches!(err, Error::NotImplemented(_)), "{err:?}");
    assert!(err.to_string().contains("'FancyOp'"), "{err}");
    let mut node = pb::node("Relu", &["x"], &["y"], &[]);
    node.extend(pb::bytes(7, b"com.microsoft"));
    let domain = pb::model(&pb::graph(&[node], &[], &x, &["y"]));
    assert_err(&domain, "'com.microsoft::Relu'");
    // A node without its required inputs.
    let gemm = pb::model(&pb::graph(
        &[pb::node("Gemm", &["x"], &["y"], &[])],
        &[],
        &x,
        &["y"],
    ));
    assert_err(&gemm, "needs 2 input(s)");
    // An attribute with a type but no value.
    let no_value = pb::cat(&[pb::bytes(1, b"axis"), pb::int(20, 4)]);
    let attr = pb::model(&pb::graph(
        &[pb::node("Flatten", &["x"], &["y"], &[no_value])],
        &[],
        &x,
        &["y"],
    ));
    assert_err(&attr, "has no value");
    // A tensor attribute with huge dims.
    let t = pb::tensor("", &[1 << 62, 4], 1, &[]);
    let constant = pb::model(&pb::graph(
        &[pb::node(
            "Constant",
            &[],
            &["y"],
            &[pb::attr_tensor("value", &t)],
        )],
        &[],
        &[],
        &["y"],
    ));
    assert_err(&constant, "too many elements");
}

#[test]
fn deep_nesting_and_huge_repeated_fields_are_errors() {
    // Subgraphs nested 3000 deep (If/Loop bodies): skipped unparsed, then refused.
    let mut g = pb::graph(&[], &[], &[], &["y"]);
    for _ in 0..3000 {
        let node = pb::node("Identity", &["x"], &["y"], &[pb::attr_graph("body", &g)]);
        g = pb::graph(&[node], &[], &["x"], &["y"]);
    }
    let text = err_text(&pb::model(&g));
    assert!(text.contains("subgraph"), "{text}");
    // Length-delimited fields nested 100000 deep, as an unknown field and as the graph.
    let nested = pb::nested(1, 100_000);
    err_text(&pb::cat(&[pb::bytes(99, &nested), pb::bytes(7, &nested)]));
    // 2**20 empty nodes (2 MiB of file): over the reader's 128 MiB budget.
    let empty_node = pb::bytes(1, b"");
    let mut graph = Vec::with_capacity(2 << 20);
    for _ in 0..1 << 20 {
        graph.extend_from_slice(&empty_node);
    }
    assert_err(&pb::model(&graph), "more than 128 MiB of graph structure");
    // A packed dims field of a million entries that the data does not match.
    let mut dims = Vec::new();
    for _ in 0..1_000_000 {
        pb::varint(1, &mut dims);
    }
    let t = pb::cat(&[
        pb::bytes(1, &dims),
        pb::int(2, 1),
        pb::bytes(8, b"w"),
        pb::f32_raw(&[1.0, 2.0]),
    ]);
    assert_err(&matmul_model(&t), "raw data has 8 bytes, expected 4");
    // A length prefix far beyond the file, and a varint longer than 64 bits.
    assert_err(
        &[0x3a, 0xff, 0xff, 0xff, 0xff, 0x0f],
        "could not parse ONNX model '<bytes>': a length runs past the end",
    );
    assert_err(
        &[
            0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ],
        "varint",
    );
}

#[test]
fn hostile_shapes_at_run_time_are_errors() {
    let x = Variable::from_tensor(Tensor::ones(&[2, 3], DType::F32).unwrap());
    // Reshape to a huge shape: checked against the input's size before anything else.
    let shape = pb::tensor(
        "s",
        &[2],
        7,
        &[pb::raw(
            &[(1i64 << 40).to_le_bytes(), (1i64 << 40).to_le_bytes()].concat(),
        )],
    );
    let reshape = pb::model(&pb::graph(
        &[pb::node("Reshape", &["x", "s"], &["y"], &[])],
        &[shape],
        &["x"],
        &["y"],
    ));
    let err = load_model_bytes(&reshape)
        .unwrap()
        .forward(&x)
        .unwrap_err()
        .to_string();
    assert!(err.contains("is invalid for input of size 6"), "{err}");
    // ConstantOfShape with a huge target.
    let shape = pb::tensor(
        "s",
        &[3],
        7,
        &[pb::raw(
            &[[0xffu8; 8], (1i64 << 30).to_le_bytes(), 4i64.to_le_bytes()].concat(),
        )],
    );
    let cos = pb::model(&pb::graph(
        &[
            pb::node("ConstantOfShape", &["s"], &["c"], &[]),
            pb::node("Add", &["x", "c"], &["y"], &[]),
        ],
        &[shape],
        &["x"],
        &["y"],
    ));
    let err = load_model_bytes(&cos)
        .unwrap()
        .forward(&x)
        .unwrap_err()
        .to_string();
    assert!(err.contains("refusing to create shape"), "{err}");
    // Conv pads that would make a huge padded input.
    let w = pb::tensor("w", &[1, 1, 1, 1], 1, &[pb::f32_raw(&[1.0])]);
    let pads = pb::cat(&[
        pb::bytes(1, b"pads"),
        pb::int(20, 7),
        pb::int(8, 1 << 40),
        pb::int(8, 0),
        pb::int(8, 0),
        pb::int(8, 0),
    ]);
    let conv = pb::model(&pb::graph(
        &[pb::node("Conv", &["x", "w"], &["y"], &[pads])],
        &[w],
        &["x"],
        &["y"],
    ));
    let x4 = Variable::from_tensor(Tensor::ones(&[1, 1, 2, 2], DType::F32).unwrap());
    let err = load_model_bytes(&conv)
        .unwrap()
        .forward(&x4)
        .unwrap_err()
        .to_string();
    assert!(err.contains("padded input too large"), "{err}");
    // Gather with an index out of range; Concat without its axis; wrong input count.
    let idx = pb::tensor("i", &[1], 7, &[pb::raw(&7i64.to_le_bytes())]);
    let gather = pb::model(&pb::graph(
        &[pb::node("Gather", &["x", "i"], &["y"], &[])],
        &[idx],
        &["x"],
        &["y"],
    ));
    let err = load_model_bytes(&gather)
        .unwrap()
        .forward(&x)
        .unwrap_err()
        .to_string();
    assert!(err.contains("index out of range"), "{err}");
    let concat = pb::model(&pb::graph(
        &[pb::node("Concat", &["x", "x"], &["y"], &[])],
        &[],
        &["x"],
        &["y"],
    ));
    let err = load_model_bytes(&concat)
        .unwrap()
        .forward(&x)
        .unwrap_err()
        .to_string();
    assert!(err.contains("'axis' is required"), "{err}");
    let err = load_model_bytes(&concat)
        .unwrap()
        .run(&[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("takes 1 input(s)"), "{err}");
    let flatten = pb::model(&pb::graph(
        &[pb::node(
            "Flatten",
            &["x"],
            &["y"],
            &[pb::attr_int("axis", 5)],
        )],
        &[],
        &["x"],
        &["y"],
    ));
    let err = load_model_bytes(&flatten)
        .unwrap()
        .forward(&x)
        .unwrap_err()
        .to_string();
    assert!(err.contains("axis out of range"), "{err}");
}

/// A fresh folder under the system's temp dir for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rustgrad_onnx_{name}_{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn external_data_is_read_only_inside_the_models_folder_and_file() {
    let root = scratch("external");
    let dir = root.join("model");
    std::fs::create_dir_all(&dir).unwrap();
    let weights: Vec<u8> = [1.0f32, -1.0, 2.0, 0.5]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let mut blob = vec![0u8; 8];
    blob.extend(&weights);
    std::fs::write(dir.join("weights.bin"), &blob).unwrap();
    std::fs::write(root.join("secret.bin"), &blob).unwrap();
    let load = |entries: &[(&str, &str)]| {
        let w = pb::tensor("w", &[2, 2], 1, &[pb::external(entries)]);
        let path = dir.join("m.onnx");
        std::fs::write(&path, matmul_model(&w)).unwrap();
        load_model(&path)
    };
    // Inside the folder, at an offset: loads and computes.
    let model = load(&[
        ("location", "weights.bin"),
        ("offset", "8"),
        ("length", "16"),
    ])
    .unwrap();
    let x = Variable::from_tensor(Tensor::from_vec(vec![1.0f32, 1.0], &[1, 2]).unwrap());
    assert_eq!(model.forward(&x).unwrap().to_vec::<f32>(), vec![3.0, 0.0]);
    let model = load(&[("location", "./weights.bin"), ("offset", "8")]).unwrap();
    assert_eq!(model.forward(&x).unwrap().to_vec::<f32>(), vec![3.0, 0.0]);
    let err = |entries: &[(&str, &str)]| load(entries).err().expect("loaded").to_string();
    let secret = root.join("secret.bin");
    let absolute = secret.to_str().unwrap();
    assert!(err(&[("location", absolute)]).contains("must be relative"));
    assert!(err(&[("location", "../secret.bin"), ("offset", "8")])
        .contains("outside the model's folder"));
    assert!(err(&[("location", "sub/../../secret.bin")]).contains("outside the model's folder"));
    assert!(err(&[("location", "missing.bin")]).contains("not found"));
    assert!(err(&[("location", ".")]).contains("outside the model's folder"));
    assert!(err(&[("location", "")]).contains("without a location"));
    assert!(err(&[
        ("location", "weights.bin"),
        ("offset", "20"),
        ("length", "16")
    ])
    .contains("is outside"));
    assert!(err(&[
        ("location", "weights.bin"),
        ("offset", "18446744073709551615"),
        ("length", "16")
    ])
    .contains("is outside"));
    assert!(
        err(&[("location", "weights.bin"), ("offset", "-8")]).contains("bad external data offset")
    );
    assert!(err(&[("location", "weights.bin"), ("length", "8")])
        .contains("external data has 8 bytes, expected 16"));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&secret, dir.join("link.bin")).unwrap();
        assert!(err(&[("location", "link.bin"), ("offset", "8")])
            .contains("outside the model's folder"));
    }
    // From bytes there is no folder to read from.
    let w = pb::tensor(
        "w",
        &[2, 2],
        1,
        &[pb::external(&[("location", "weights.bin")])],
    );
    assert_err(&matmul_model(&w), "load the model from a file path");
    std::fs::remove_dir_all(&root).ok();
}

/// An INTS attribute.
fn attr_ints(name: &str, values: &[i64]) -> Vec<u8> {
    let mut fields = vec![pb::bytes(1, name.as_bytes()), pb::int(20, 7)];
    fields.extend(values.iter().map(|&v| pb::int(8, v)));
    pb::cat(&fields)
}

/// An int64 initializer.
fn ints_init(name: &str, values: &[i64]) -> Vec<u8> {
    let raw: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    pb::tensor(name, &[values.len() as i64], 7, &[pb::raw(&raw)])
}

fn f32_init(name: &str, dims: &[i64]) -> Vec<u8> {
    let n: i64 = dims.iter().product();
    let values: Vec<f32> = (0..n).map(|i| (i % 7) as f32 * 0.25 - 0.5).collect();
    pb::tensor(name, dims, 1, &[pb::f32_raw(&values)])
}

#[test]
fn hostile_attribute_values_and_shape_inputs_are_errors_never_panics() {
    const HOSTILE: [i64; 12] = [
        i64::MIN,
        -(1 << 62),
        -(1 << 31),
        -5,
        -1,
        0,
        1,
        2,
        7,
        1 << 31,
        1 << 62,
        i64::MAX,
    ];
    // (op, int attributes with their lengths (0: a single INT), int64 inputs with their
    // lengths, the float inputs' shapes); x is (1, 2, 5, 5).
    type Case = (
        &'static str,
        &'static [(&'static str, usize)],
        &'static [(&'static str, usize)],
        &'static [&'static [i64]],
    );
    let cases: &[Case] = &[
        (
            "Conv",
            &[
                ("kernel_shape", 2),
                ("strides", 2),
                ("pads", 4),
                ("dilations", 2),
                ("group", 0),
            ],
            &[],
            &[&[2, 2, 3, 3]],
        ),
        ("Conv", &[("group", 0)], &[], &[&[2, 1, 3, 3], &[2]]),
        (
            "MaxPool",
            &[
                ("kernel_shape", 2),
                ("strides", 2),
                ("pads", 4),
                ("dilations", 2),
                ("ceil_mode", 0),
            ],
            &[],
            &[],
        ),
        (
            "AveragePool",
            &[
                ("kernel_shape", 2),
                ("strides", 2),
                ("pads", 4),
                ("ceil_mode", 0),
                ("count_include_pad", 0),
            ],
            &[],
            &[],
        ),
        ("Flatten", &[("axis", 0)], &[], &[]),
        ("Softmax", &[("axis", 0)], &[], &[]),
        ("Concat", &[("axis", 0)], &[], &[&[1, 2, 5, 5]]),
        ("Transpose", &[("perm", 4)], &[], &[]),
        ("Gather", &[("axis", 0)], &[("i", 2)], &[]),
        ("Reshape", &[("allowzero", 0)], &[("s", 3)], &[]),
        ("Unsqueeze", &[], &[("a", 2)], &[]),
        ("Squeeze", &[], &[("a", 1)], &[]),
        ("ReduceMean", &[("keepdims", 0)], &[("a", 2)], &[]),
        (
            "Slice",
            &[],
            &[("st", 2), ("en", 2), ("ax", 2), ("sp", 2)],
            &[],
        ),
        ("Shape", &[("start", 0), ("end", 0)], &[], &[]),
        ("Cast", &[("to", 0)], &[], &[]),
        ("ConstantOfShape", &[], &[("s", 3)], &[]),
        ("Expand", &[], &[("s", 4)], &[]),
        ("Trilu", &[("upper", 0)], &[("k", 1)], &[]),
        ("GatherND", &[("batch_dims", 0)], &[("g", 2)], &[]),
        ("ReduceMax", &[("keepdims", 0)], &[("a", 2)], &[]),
        ("Compress", &[("axis", 0)], &[("c", 3)], &[]),
        (
            "BatchNormalization",
            &[("training_mode", 0)],
            &[],
            &[&[2], &[2], &[2], &[2]],
        ),
        ("GlobalAveragePool", &[], &[], &[]),
        (
            "LSTM",
            &[("hidden_size", 0), ("layout", 0)],
            &[],
            &[&[1, 12, 5], &[1, 12, 3]],
        ),
        (
            "GRU",
            &[("hidden_size", 0), ("linear_before_reset", 0)],
            &[],
            &[&[1, 9, 5], &[1, 9, 3]],
        ),
    ];
    let x4 = Variable::from_tensor(Tensor::ones(&[1, 2, 5, 5], DType::F32).unwrap());
    let x3 = Variable::from_tensor(Tensor::ones(&[2, 1, 5], DType::F32).unwrap());
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut failures = Vec::new();
    let mut rng = Rng(7);
    let mut errors = 0;
    let mut ran = std::collections::BTreeSet::new();
    for &(op, attrs, int_inputs, float_inputs) in cases {
        let x = if op == "LSTM" || op == "GRU" {
            &x3
        } else {
            &x4
        };
        // Defaults that make the plain case valid, then one value at a time replaced.
        let plain = |len: usize| vec![1i64; len.max(1)];
        // (attribute values, shape-input values) per trial.
        type Trial = (Vec<Vec<i64>>, Vec<Vec<i64>>);
        let mut trials: Vec<Trial> = Vec::new();
        let base_attrs: Vec<Vec<i64>> = attrs
            .iter()
            .map(|&(name, len)| match name {
                "hidden_size" => vec![3],
                "perm" => vec![0, 2, 1, 3],
                _ => plain(len),
            })
            .collect();
        let base_inputs: Vec<Vec<i64>> = int_inputs
            .iter()
            .map(|&(name, len)| {
                if name == "g" {
                    vec![0; len]
                } else {
                    plain(len)
                }
            })
            .collect();
        for (k, &(_, len)) in attrs.iter().enumerate() {
            for pos in 0..len.max(1) {
                for &v in &HOSTILE {
                    let mut a = base_attrs.clone();
                    a[k][pos] = v;
                    trials.push((a, base_inputs.clone()));
                }
            }
        }
        for (k, &(_, len)) in int_inputs.iter().enumerate() {
            for pos in 0..len {
                for &v in &HOSTILE {
                    let mut inp = base_inputs.clone();
                    inp[k][pos] = v;
                    trials.push((base_attrs.clone(), inp));
                }
            }
        }
        // And some random combinations of the hostile values everywhere.
        for _ in 0..40 {
            let pick = |rng: &mut Rng, len: usize| -> Vec<i64> {
                (0..len.max(1))
                    .map(|_| HOSTILE[rng.below(HOSTILE.len())])
                    .collect()
            };
            let a = attrs.iter().map(|&(_, len)| pick(&mut rng, len)).collect();
            let i = int_inputs
                .iter()
                .map(|&(_, len)| pick(&mut rng, len))
                .collect();
            trials.push((a, i));
        }
        for (attr_values, input_values) in trials {
            let attr_protos: Vec<Vec<u8>> = attrs
                .iter()
                .zip(&attr_values)
                .map(|(&(name, len), v)| {
                    if len == 0 {
                        pb::attr_int(name, v[0])
                    } else {
                        attr_ints(name, v)
                    }
                })
                .collect();
            let mut inits = Vec::new();
            let mut names = vec!["x".to_string()];
            for (k, dims) in float_inputs.iter().enumerate() {
                let name = format!("f{k}");
                inits.push(f32_init(&name, dims));
                names.push(name);
            }
            for (&(name, _), v) in int_inputs.iter().zip(&input_values) {
                inits.push(ints_init(name, v));
                names.push(name.to_string());
            }
            if op == "Concat" || op == "ConstantOfShape" {
                names.remove(0);
            }
            let ins: Vec<&str> = names.iter().map(String::as_str).collect();
            let mut graph_inputs = vec!["x"];
            if op == "ConstantOfShape" {
                graph_inputs.clear();
            }
            let bytes = pb::model(&pb::graph(
                &[pb::node(op, &ins, &["y"], &attr_protos)],
                &inits,
                &graph_inputs,
                &["y"],
            ));
            let t0 = Instant::now();
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let model = load_model_bytes(&bytes)?;
                if op == "ConstantOfShape" {
                    model.run(&[])
                } else {
                    model.run(std::slice::from_ref(x))
                }
            }));
            match outcome {
                Err(_) => failures.push(format!("{op} {attr_values:?} {input_values:?}")),
                Ok(Err(_)) => errors += 1,
                Ok(Ok(_)) => {
                    ran.insert(op);
                }
            }
            assert!(
                t0.elapsed() < Duration::from_secs(5),
                "{op} {attr_values:?} {input_values:?} took {:?}",
                t0.elapsed()
            );
        }
    }
    std::panic::set_hook(hook);
    assert!(
        failures.is_empty(),
        "{} panics: {:?}",
        failures.len(),
        &failures[..failures.len().min(20)]
    );
    assert!(errors > 100, "only {errors} errors");
    // Every op also ran with valid values (the sweep reaches the run-time checks).
    assert_eq!(ran.len(), cases.len() - 1, "ops that ran: {ran:?}");
}

/// Runs one `op` node on initializers `inputs` (in order) and returns its output.
fn run_one(
    op: &str,
    inputs: &[Vec<u8>],
    names: &[&str],
    attrs: &[Vec<u8>],
) -> rustgrad::Result<Variable> {
    let bytes = pb::model(&pb::graph(
        &[pb::node(op, names, &["y"], attrs)],
        inputs,
        &[],
        &["y"],
    ));
    Ok(load_model_bytes(&bytes)?.run(&[])?.remove(0))
}

fn bool_init(name: &str, values: &[bool]) -> Vec<u8> {
    let raw: Vec<u8> = values.iter().map(|&b| b as u8).collect();
    pb::tensor(name, &[values.len() as i64], 9, &[pb::raw(&raw)])
}

fn f32_values(name: &str, dims: &[i64], values: &[f32]) -> Vec<u8> {
    pb::tensor(name, dims, 1, &[pb::f32_raw(values)])
}

#[test]
fn comparison_selection_and_index_ops_follow_the_onnx_definitions() {
    // Values worked out by hand from the ONNX operator definitions.
    let a = f32_values("a", &[2, 3], &[1.0, 5.0, 3.0, 4.0, 2.0, 6.0]);
    let b = f32_values("b", &[3], &[1.0, 2.0, 6.0]);
    // Opset 17: ReduceMax/Min take their axes as an attribute (an input from 18).
    let axes = attr_ints("axes", &[1]);
    let keep0 = pb::attr_int("keepdims", 0);
    let y = run_one(
        "ReduceMax",
        std::slice::from_ref(&a),
        &["a"],
        &[axes.clone(), keep0.clone()],
    )
    .unwrap();
    assert_eq!(y.to_vec::<f32>(), [5.0, 6.0]);
    let y = run_one(
        "ReduceMin",
        std::slice::from_ref(&a),
        &["a"],
        &[axes, keep0],
    )
    .unwrap();
    assert_eq!(y.to_vec::<f32>(), [1.0, 2.0]);
    let y = run_one("ReduceMax", std::slice::from_ref(&a), &["a"], &[]).unwrap();
    assert_eq!(
        (y.to_vec::<f32>(), y.shape().to_vec()),
        (vec![6.0], vec![1, 1])
    );
    for (op, want) in [
        ("Equal", [true, false, false, false, true, true]),
        ("Greater", [false, true, false, true, false, false]),
        ("Less", [false, false, true, false, false, false]),
        ("GreaterOrEqual", [true, true, false, true, true, true]),
        ("LessOrEqual", [true, false, true, false, true, true]),
    ] {
        let y = run_one(op, &[a.clone(), b.clone()], &["a", "b"], &[]).unwrap();
        assert_eq!(y.dtype(), DType::Bool, "{op}");
        assert_eq!(y.to_vec::<bool>(), want, "{op}");
    }
    let c = bool_init("c", &[true, false, true]);
    let y = run_one("Not", std::slice::from_ref(&c), &["c"], &[]).unwrap();
    assert_eq!(y.to_vec::<bool>(), [false, true, false]);
    // Where broadcasts the condition over rows.
    let y = run_one(
        "Where",
        &[c.clone(), a.clone(), b.clone()],
        &["c", "a", "b"],
        &[],
    )
    .unwrap();
    assert_eq!(y.to_vec::<f32>(), [1.0, 2.0, 3.0, 4.0, 2.0, 6.0]);
    // Trilu: upper with k = 1, lower with the default k = 0.
    let k = ints_init("k", &[1]);
    let y = run_one("Trilu", &[a.clone(), k], &["a", "k"], &[]).unwrap();
    assert_eq!(y.to_vec::<f32>(), [0.0, 5.0, 3.0, 0.0, 0.0, 6.0]);
    let y = run_one(
        "Trilu",
        std::slice::from_ref(&a),
        &["a"],
        &[pb::attr_int("upper", 0)],
    )
    .unwrap();
    assert_eq!(y.to_vec::<f32>(), [1.0, 0.0, 0.0, 4.0, 2.0, 0.0]);
    // Expand: (3,) to (2, 1, 3), numpy broadcasting in both directions.
    let s = ints_init("s", &[2, 1, 1]);
    let y = run_one("Expand", &[b.clone(), s], &["b", "s"], &[]).unwrap();
    assert_eq!(y.shape().to_vec(), [2, 1, 3]);
    assert_eq!(y.to_vec::<f32>(), [1.0, 2.0, 6.0, 1.0, 2.0, 6.0]);
    let huge = ints_init("s", &[1 << 20, 1 << 20, 3]);
    let err = run_one("Expand", &[b.clone(), huge], &["b", "s"], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("refusing to create shape"), "{err}");
    let wrong = ints_init("s", &[2]);
    let err = run_one("Expand", &[b.clone(), wrong], &["b", "s"], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("does not broadcast"), "{err}");
    // NonZero: (rank, count) coordinates.
    let z = f32_values("z", &[2, 2], &[0.0, 1.0, 2.0, 0.0]);
    let y = run_one("NonZero", &[z], &["z"], &[]).unwrap();
    assert_eq!(
        (y.to_vec::<i64>(), y.shape().to_vec()),
        (vec![0, 1, 1, 0], vec![2, 2])
    );
    // GatherND: full index tuples and row tuples, negative indices wrap.
    let i = pb::tensor(
        "i",
        &[2, 2],
        7,
        &[pb::raw(
            &[0i64, 1, -1, 2]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )],
    );
    let y = run_one("GatherND", &[a.clone(), i], &["a", "i"], &[]).unwrap();
    assert_eq!(y.to_vec::<f32>(), [5.0, 6.0]);
    let rows = pb::tensor("i", &[1, 1], 7, &[pb::raw(&1i64.to_le_bytes())]);
    let y = run_one("GatherND", &[a.clone(), rows], &["a", "i"], &[]).unwrap();
    assert_eq!(
        (y.to_vec::<f32>(), y.shape().to_vec()),
        (vec![4.0, 2.0, 6.0], vec![1, 3])
    );
    let out = pb::tensor(
        "i",
        &[1, 2],
        7,
        &[pb::raw(
            &[0i64, 3]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>(),
        )],
    );
    let err = run_one("GatherND", &[a.clone(), out], &["a", "i"], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("index out of range"), "{err}");
    // Compress along an axis, and flattened without one.
    let y = run_one(
        "Compress",
        &[a.clone(), c.clone()],
        &["a", "c"],
        &[pb::attr_int("axis", 1)],
    )
    .unwrap();
    assert_eq!(y.to_vec::<f32>(), [1.0, 3.0, 4.0, 6.0]);
    let y = run_one("Compress", &[a.clone(), c], &["a", "c"], &[]).unwrap();
    assert_eq!(y.to_vec::<f32>(), [1.0, 3.0]);
    let long = bool_init("c", &[true; 7]);
    let err = run_one("Compress", &[a, long], &["a", "c"], &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("condition of shape"), "{err}");
}

#[test]
fn integer_division_by_zero_or_overflow_is_not_a_panic() {
    // ONNX's integer Div truncates; a zero divisor is PyTorch's ZeroDivisionError and
    // i64::MIN / -1 wraps (PyTorch's CPU kernel dies of SIGFPE there).
    let a = ints_init("a", &[7, i64::MIN, -7]);
    let div = |divisor: &[i64]| {
        let b = ints_init("b", divisor);
        run_one("Div", &[a.clone(), b], &["a", "b"], &[]).map(|y| y.to_vec::<i64>())
    };
    assert_eq!(div(&[2, -1, 2]).unwrap(), [3, i64::MIN, -3]);
    for divisor in [[2, -1, 0], [0, 0, 0]] {
        let err = div(&divisor).unwrap_err().to_string();
        assert!(err.contains("ZeroDivisionError"), "{err}");
    }
}

/// A FLOAT attribute.
fn attr_float(name: &str, v: f32) -> Vec<u8> {
    let mut f = pb::bytes(1, name.as_bytes());
    f.extend(pb::int(20, 1));
    f.push((2 << 3) | 5);
    f.extend(v.to_le_bytes());
    f
}

/// A STRING attribute.
fn attr_string(name: &str, v: &str) -> Vec<u8> {
    pb::cat(&[
        pb::bytes(1, name.as_bytes()),
        pb::int(20, 3),
        pb::bytes(4, v.as_bytes()),
    ])
}

#[test]
fn random_graphs_of_every_op_are_errors_never_panics() {
    // Random wiring of the supported ops over float, int64 and bool values, with random
    // attributes: reaches each op with the wrong dtypes, ranks and sizes.
    let ops = onnx::supported_ops();
    const SMALL: [i64; 10] = [-3, -2, -1, 0, 1, 1, 2, 2, 3, 5];
    let int_attrs = [
        "axis",
        "group",
        "keepdims",
        "to",
        "upper",
        "start",
        "end",
        "transA",
        "transB",
        "hidden_size",
        "ceil_mode",
        "count_include_pad",
        "allowzero",
        "batch_dims",
        "layout",
        "noop_with_empty_axes",
        "linear_before_reset",
        "value_int",
    ];
    let ints_attrs = [
        "axes",
        "perm",
        "kernel_shape",
        "strides",
        "pads",
        "dilations",
        "value_ints",
    ];
    let float_attrs = ["alpha", "beta", "epsilon", "value_float"];
    let string_attrs = [
        (
            "direction",
            ["forward", "reverse", "bidirectional", "sideways"],
        ),
        ("auto_pad", ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"]),
    ];
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let mut rng = Rng(11);
    let mut failures = Vec::new();
    let mut ran = 0;
    let start = Instant::now();
    let scale: usize = std::env::var("RUSTGRAD_ONNX_FUZZ_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for case in 0..3000 * scale {
        let x_dims: Vec<i64> = (0..rng.below(5)).map(|_| 1 + rng.below(4) as i64).collect();
        let s_values: Vec<i64> = (0..1 + rng.below(4))
            .map(|_| SMALL[rng.below(10)])
            .collect();
        let inits = vec![
            f32_init("f", &x_dims),
            ints_init("s", &s_values),
            bool_init("b", &[true, false, true]),
            f32_init("v", &[3]),
        ];
        let mut values: Vec<String> = ["f", "s", "b", "v"].map(String::from).to_vec();
        let mut nodes = Vec::new();
        for k in 0..1 + rng.below(3) {
            let op = ops[rng.below(ops.len())];
            let inputs: Vec<&str> = (0..rng.below(5))
                .map(|_| values[rng.below(values.len())].as_str())
                .collect();
            let mut attrs = Vec::new();
            for _ in 0..rng.below(4) {
                attrs.push(match rng.below(4) {
                    0 => pb::attr_int(int_attrs[rng.below(int_attrs.len())], SMALL[rng.below(10)]),
                    1 => {
                        let v: Vec<i64> = (0..rng.below(5)).map(|_| SMALL[rng.below(10)]).collect();
                        attr_ints(ints_attrs[rng.below(ints_attrs.len())], &v)
                    }
                    2 => attr_float(
                        float_attrs[rng.below(float_attrs.len())],
                        SMALL[rng.below(10)] as f32 * 0.5,
                    ),
                    _ => {
                        let (name, options) = string_attrs[rng.below(2)];
                        attr_string(name, options[rng.below(4)])
                    }
                });
            }
            let outputs = [format!("o{k}a"), format!("o{k}b")];
            let out_refs: Vec<&str> = outputs[..1 + rng.below(2)]
                .iter()
                .map(String::as_str)
                .collect();
            nodes.push(pb::node(op, &inputs, &out_refs, &attrs));
            values.extend(out_refs.iter().map(|o| o.to_string()));
        }
        let last = values.last().unwrap().clone();
        let bytes = pb::model(&pb::graph(&nodes, &inits, &[], &[last.as_str()]));
        let t0 = Instant::now();
        let outcome =
            std::panic::catch_unwind(|| load_model_bytes(&bytes).and_then(|m| m.run(&[])));
        match outcome {
            Err(_) => failures.push(case),
            Ok(Ok(_)) => ran += 1,
            Ok(Err(_)) => {}
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "case {case} took {:?}",
            t0.elapsed()
        );
        if failures.len() == 1 && failures[0] == case {
            std::fs::write(
                std::env::temp_dir().join("onnx_random_graph_failure.onnx"),
                &bytes,
            )
            .ok();
        }
    }
    std::panic::set_hook(hook);
    assert!(
        failures.is_empty(),
        "{} panics, first cases {:?}",
        failures.len(),
        &failures[..failures.len().min(10)]
    );
    assert!(ran > 100, "only {ran} graphs ran");
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn a_long_chain_of_nodes_runs_and_backpropagates_without_recursion() {
    // 30,000 nodes in a line (deeper than a recursive walk survives on a test
    // thread's 2 MiB stack): the topological sort, the interpreter, backward and the
    // teardown of the recorded graph are all iterative.
    let n = 30_000;
    let names: Vec<String> = (0..=n).map(|i| format!("v{i}")).collect();
    let nodes: Vec<Vec<u8>> = (0..n)
        .rev() // stored in reverse: the sort has to reorder every node
        .map(|i| pb::node("Relu", &[&names[i]], &[&names[i + 1]], &[]))
        .collect();
    let w = f32_values("v0", &[2], &[1.5, -1.0]);
    let bytes = pb::model(&pb::graph(&nodes, &[w], &[], &[&names[n]]));
    let model = load_model_bytes(&bytes).unwrap();
    let y = model.run(&[]).unwrap().remove(0);
    assert_eq!(y.to_vec::<f32>(), [1.5, 0.0]);
    y.sum().unwrap().backward().unwrap();
    let w = model.initializer("v0").unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>(), [1.0, 0.0]);
}
