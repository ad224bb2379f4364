//! Runs the training of `examples/fit_linear.rs`, so that `cargo test` checks the
//! example still learns, not only that it compiles. One test: the example seeds the
//! process-wide random generator.

#[allow(dead_code)] // the example's `main`
#[path = "../examples/fit_linear.rs"]
mod fit_linear;

#[test]
fn example_training_reduces_the_loss_tenfold() -> rustgrad::Result<()> {
    for seed in [0, 7] {
        let (initial, last) = fit_linear::train(seed, false)?;
        assert!(
            fit_linear::dropped_enough(initial, last),
            "seed {seed}: loss went from {initial} to {last}"
        );
    }
    Ok(())
}
