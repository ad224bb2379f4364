//! PyTorch `.pth` checkpoints read in Rust (`rustgrad::nn::load_pth`, Note [Rust
//! modules]) with the weights-only rules. Fixtures from
//! tests/vectors/generate_checkpoints.py (written by `torch.save`) and PyTorch's outputs
//! for them (tests/vectors/rust_nn_pth_expected.safetensors, converted from
//! ckpt_resnet_expected.npz).

use rustgrad::models::{Block, ResNet};
use rustgrad::nn::{self, Module, TorchValue};
use rustgrad::Variable;

fn vector(name: &str) -> String {
    format!("{}/../../tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn a_torch_save_resnet_loads_by_name_and_gives_pytorchs_logits() {
    let checkpoint = nn::load_pth(vector("ckpt_resnet_zip.pt")).unwrap();
    assert!(matches!(checkpoint.get("epoch"), Some(TorchValue::Int(2))));
    let state = checkpoint.get("model").unwrap().to_state_dict().unwrap();
    // The width-reduced ResNet-18 of generate_checkpoints.py: channels 4-8-16-32.
    let model =
        nn::init::skip_init(|| ResNet::with_widths(Block::Basic, [2, 2, 2, 2], [4, 8, 16, 32], 10))
            .unwrap();
    model.load_state_dict(&state, true).unwrap();
    model.eval();
    let expected = nn::load_file(vector("rust_nn_pth_expected.safetensors")).unwrap();
    let input = Variable::from_tensor(expected.get("eval_input").unwrap().clone());
    let got = model.forward(&input).unwrap().to_vec::<f32>();
    let want = expected.get("eval_output").unwrap().to_vec::<f32>();
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // PyTorch's float32 kernels sum in another order.
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "logit {i}: {g} vs {w}"
        );
    }
    // nn::load_file reads torch.save files too, when they hold a state dict.
    let err = nn::load_file(vector("ckpt_resnet_zip.pt"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("checkpoint.get(\"model\")"), "{err}");
    // The optimizer state is plain values and tensors too.
    assert!(matches!(
        checkpoint.get("optimizer"),
        Some(TorchValue::Dict(_))
    ));
}

#[test]
fn views_of_one_storage_ints_bools_parameters_and_plain_values() {
    let obj = nn::load_pth(vector("ckpt_views.pt")).unwrap();
    let tensor = |k: &str| match obj.get(k) {
        Some(TorchValue::Tensor(t)) => t.clone(),
        other => panic!("{k}: {other:?}"),
    };
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    assert_eq!(tensor("x").to_vec::<f32>(), x);
    assert_eq!(tensor("x").shape(), &[3, 4]);
    assert_eq!(tensor("row").to_vec::<f32>(), [4.0, 5.0, 6.0, 7.0]);
    assert_eq!(tensor("col").to_vec::<f32>(), [2.0, 6.0, 10.0]);
    assert_eq!(
        tensor("t").to_vec::<f32>(),
        [0.0, 4.0, 8.0, 1.0, 5.0, 9.0, 2.0, 6.0, 10.0, 3.0, 7.0, 11.0]
    );
    assert_eq!(tensor("alias").to_vec::<f32>(), x);
    assert_eq!(tensor("ints").to_vec::<i64>(), [1, -2, 3, 1 << 40]);
    assert_eq!(tensor("mask").to_vec::<bool>(), [true, false, true]);
    assert_eq!(tensor("param").to_vec::<f32>(), [0.5, -1.5]);
    match obj.get("plain") {
        Some(TorchValue::List(items)) => {
            assert!(matches!(items[..], [
                TorchValue::Int(1),
                TorchValue::Float(f),
                TorchValue::Str(ref s),
                TorchValue::None,
                TorchValue::Bool(true),
                TorchValue::Tuple(_),
            ] if f == 2.5 && s == "s"));
        }
        other => panic!("plain: {other:?}"),
    }
    assert!(obj.to_state_dict().is_err(), "not a dict of tensors only");
}

#[test]
fn code_other_globals_devices_and_the_legacy_format_are_refused() {
    for (file, phrase) in [
        ("ckpt_malicious.pt", "Unsupported global: GLOBAL os.system"),
        (
            "ckpt_unsafe_global.pt",
            "Unsupported global: GLOBAL fractions.Fraction",
        ),
        (
            "ckpt_cuda.pt",
            "Attempting to deserialize object on a CUDA device",
        ),
        ("ckpt_resnet_legacy.pt", "legacy format"),
    ] {
        let err = nn::load_pth(vector(file)).unwrap_err().to_string();
        assert!(err.contains(phrase), "{file}: {err}");
    }
    assert!(!std::path::Path::new("rustgrad_ckpt_pwned").exists());
}

#[test]
fn every_truncation_and_bit_flip_of_a_checkpoint_is_an_error_or_a_value() {
    let bytes = std::fs::read(vector("ckpt_views.pt")).unwrap();
    for len in 0..bytes.len() {
        assert!(
            nn::load_pth_bytes(&bytes[..len]).is_err(),
            "truncated at {len}"
        );
    }
    // One bit of every byte (a different bit from byte to byte), and every bit of the
    // central directory at the end: an error or a value, never a panic. (Flips in
    // storage records change values undetected: the format has no checksum.)
    let tail = bytes.len().saturating_sub(512);
    for at in 0..bytes.len() {
        let bits: Vec<u8> = if at >= tail {
            (0..8).collect()
        } else {
            vec![(at % 8) as u8]
        };
        for bit in bits {
            let mut flipped = bytes.clone();
            flipped[at] ^= 1 << bit;
            let _ = nn::load_pth_bytes(&flipped);
        }
    }
}

/// A zip archive (stored records) holding `records`.
fn zip(records: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (name, data) in records {
        let offset = out.len() as u32;
        let header = |sig: u32, central: bool| {
            let mut h = sig.to_le_bytes().to_vec();
            if central {
                h.extend(20u16.to_le_bytes());
            }
            h.extend([20, 0, 0, 0, 0, 0, 0, 0, 0, 0]); // version, flags, method, time, date
            h.extend(0u32.to_le_bytes()); // crc (not checked)
            h.extend((data.len() as u32).to_le_bytes());
            h.extend((data.len() as u32).to_le_bytes());
            h.extend((name.len() as u16).to_le_bytes());
            h.extend(0u16.to_le_bytes());
            h
        };
        out.extend(header(0x0403_4b50, false));
        out.extend(name.as_bytes());
        out.extend(*data);
        let mut c = header(0x0201_4b50, true);
        c.extend([0u8; 6]); // comment length, disk, internal attributes
        c.extend(0u32.to_le_bytes()); // external attributes
        c.extend(offset.to_le_bytes());
        c.extend(name.as_bytes());
        central.push(c);
    }
    let start = out.len() as u32;
    let size: usize = central.iter().map(Vec::len).sum();
    central.iter().for_each(|c| out.extend(c));
    out.extend(0x0605_4b50u32.to_le_bytes());
    out.extend([0u8; 4]);
    out.extend((records.len() as u16).to_le_bytes());
    out.extend((records.len() as u16).to_le_bytes());
    out.extend((size as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

#[test]
fn hostile_pickles_are_errors_never_panics() {
    let storage = 7f32.to_le_bytes();
    let tensor_pickle = |size: &[u8], stride: &[u8], offset: &[u8]| -> Vec<u8> {
        let mut p =
            b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage".to_vec();
        p.extend(b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQ");
        p.extend(offset);
        p.extend(size);
        p.extend(stride);
        p.extend(b"\x89ccollections\nOrderedDict\n)RtR.");
        p
    };
    let ok = tensor_pickle(b"K\x01\x85", b"K\x01\x85", b"K\x00");
    let archive = |pickle: &[u8]| zip(&[("a/data.pkl", pickle), ("a/data/0", &storage)]);
    match nn::load_pth_bytes(&archive(&ok)).unwrap() {
        TorchValue::Tensor(t) => assert_eq!(t.to_vec::<f32>(), [7.0]),
        other => panic!("{other:?}"),
    }
    let nested = {
        let mut p = b"\x80\x02".to_vec();
        p.extend(std::iter::repeat_n(b'(', 100_000));
        p.extend(b"t\x85");
        p
    };
    let deep_lists = {
        let mut p = b"\x80\x02".to_vec();
        p.extend(std::iter::repeat_n(b']', 10_000));
        p.extend(std::iter::repeat_n(b'a', 9_999));
        p.push(b'.');
        p
    };
    let cyclic = b"\x80\x02]q\x00h\x00a.".to_vec();
    let hostile: Vec<Vec<u8>> = vec![
        tensor_pickle(b"K\x02\x85", b"K\x01\x85", b"K\x00"), // past the storage
        tensor_pickle(b"K\x01\x85", b"K\x01\x85", b"K\x05"), // offset past the end
        tensor_pickle(b"\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40K\x04\x86", b"K\x01K\x01\x86", b"K\x00"),
        tensor_pickle(b"K\x01\x85", b"K\x01K\x01\x86", b"K\x00"), // rank mismatch
        tensor_pickle(b"J\xff\xff\xff\xff\x85", b"K\x01\x85", b"K\x00"), // negative size
        b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00lsR.".to_vec(),
        b"\x80\x02cbuiltins\neval\n.".to_vec(),
        b"\x80\x02X\xff\xff\xff\xffabc.".to_vec(), // string past the end
        b"\x80\x02h\x05.".to_vec(),                // unknown memo key
        b"\x80\x02a.".to_vec(),                    // stack underflow
        b"\x80\x02t.".to_vec(),                    // no mark
        b"\x80\x02}K\x01s.".to_vec(),              // SETITEM underflow
        b"\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.".to_vec(), // 72-bit int
        b"\x80\x09.".to_vec(),                     // unknown protocol
        b"\x80\x02K\x01K\x02R.".to_vec(),          // REDUCE of an int
        b"\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x009X\x03\x00\x00\x00cpuK\x01tQ.".to_vec(), // missing record
        b"\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x05tQ.".to_vec(), // wrong size
        nested,
        deep_lists,
        cyclic,
        Vec::new(),
    ];
    for (i, pickle) in hostile.iter().enumerate() {
        assert!(nn::load_pth_bytes(&archive(pickle)).is_err(), "case {i}");
    }
    assert!(nn::load_pth_bytes(b"PK\x03\x04").is_err());
    assert!(nn::load_pth_bytes(&zip(&[("x/other", b"")])).is_err());
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Random overwrites, insertions and deletions anywhere in a `torch.save`
        /// file: an error or a value, never a panic, a hang or an abort.
        #[test]
        fn mutated_pth_files_never_panic(
            edits in proptest::collection::vec((any::<u16>(), any::<u8>(), 0u8..3), 1..6)
        ) {
            let mut bytes = std::fs::read(vector("ckpt_views.pt")).unwrap();
            for (at, byte, kind) in edits {
                let at = at as usize % (bytes.len() + 1);
                match kind {
                    0 if at < bytes.len() => bytes[at] = byte,
                    1 => bytes.insert(at, byte),
                    _ if at < bytes.len() => { bytes.remove(at); }
                    _ => {}
                }
            }
            let _ = nn::load_pth_bytes(&bytes);
        }
    }
}
