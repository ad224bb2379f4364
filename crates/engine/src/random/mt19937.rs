//! The 32-bit Mersenne Twister with PyTorch's bookkeeping (`left`, `next`), so that
//! its state can be written in PyTorch's `get_rng_state` layout. See Note [Random
//! numbers].
//!
//! Written here rather than taken from the `rand_mt` crate: `rand_mt` seeds the same
//! way and yields the same stream, but does not expose its state vector or its
//! position, which `get_state`/`set_state` need to read and write.

/// Number of 32-bit words of state.
pub const STATE_N: usize = 624;
const STATE_M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// mt19937 state: the seed it was made from, the state words, and where the next
/// output comes from (`left` counts down to the next regeneration, `next` indexes
/// `state`), as PyTorch's `mt19937_data_pod` keeps them.
#[derive(Clone, Debug)]
pub struct Mt19937 {
    pub(crate) seed: u64,
    pub(crate) left: u32,
    pub(crate) next: u32,
    pub(crate) state: [u32; STATE_N],
}

/// The twister's output transform of one state word.
#[inline(always)]
fn temper(mut y: u32) -> u32 {
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c_5680;
    y ^= (y << 15) & 0xefc6_0000;
    y ^ (y >> 18)
}

impl Mt19937 {
    /// Seeds with the low 32 bits of `seed` (`init_genrand`); the full 64-bit seed is
    /// kept for `initial_seed`, as PyTorch does.
    pub fn new(seed: u64) -> Mt19937 {
        let mut state = [0u32; STATE_N];
        state[0] = seed as u32;
        for j in 1..STATE_N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Mt19937 {
            seed,
            left: 1,
            next: 0,
            state,
        }
    }

    /// Whether a state read from outside can be used (PyTorch's `is_valid`).
    pub(crate) fn is_valid(&self) -> bool {
        self.left > 0 && self.left as usize <= STATE_N && self.next as usize <= STATE_N
    }

    /// The next 32-bit output.
    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        self.left -= 1;
        if self.left == 0 {
            self.regenerate();
        }
        let y = self.state[self.next as usize];
        self.next += 1;
        temper(y)
    }

    /// Fills `out` with the next outputs, the words `next_u32` would return one by one,
    /// copied and tempered in runs (which vectorise) instead of one call per word.
    pub fn fill_u32(&mut self, out: &mut [u32]) {
        let mut done = 0;
        while done < out.len() {
            // `next_u32` reads the word at `next` after counting `left` down, and
            // regenerates when the count reaches 0: `left - 1` words are readable now.
            let (from, run) = if self.left <= 1 {
                self.regenerate();
                let run = (out.len() - done).min(STATE_N);
                // As `run` calls would leave it: the first read after a regeneration
                // does not count `left` down.
                self.left = (STATE_N - run + 1) as u32;
                (0, run)
            } else {
                let run = (out.len() - done).min(self.left as usize - 1);
                self.left -= run as u32;
                (self.next as usize, run)
            };
            self.next = (from + run) as u32;
            for (o, &y) in out[done..done + run]
                .iter_mut()
                .zip(&self.state[from..from + run])
            {
                *o = temper(y);
            }
            done += run;
        }
    }

    #[cold]
    #[inline(never)]
    fn regenerate(&mut self) {
        let twist = |u: u32, v: u32| {
            let mixed = (u & UPPER_MASK) | (v & LOWER_MASK);
            (mixed >> 1) ^ if v & 1 == 1 { MATRIX_A } else { 0 }
        };
        let s = &mut self.state;
        // The recurrence `s[j] = s[(j + M) % N] ^ twist(s[j], s[(j + 1) % N])` in
        // order, in three runs without the modulo (so the first two vectorise): the
        // first reads only words not yet regenerated, the second words the first wrote.
        for j in 0..STATE_N - STATE_M {
            s[j] = s[j + STATE_M] ^ twist(s[j], s[j + 1]);
        }
        for j in STATE_N - STATE_M..STATE_N - 1 {
            s[j] = s[j + STATE_M - STATE_N] ^ twist(s[j], s[j + 1]);
        }
        s[STATE_N - 1] = s[STATE_M - 1] ^ twist(s[STATE_N - 1], s[0]);
        self.left = STATE_N as u32;
        self.next = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_outputs() {
        // The reference implementation's well-known first outputs for seed 5489, and
        // the 10000th output that the C++ standard requires of std::mt19937.
        let mut mt = Mt19937::new(5489);
        assert_eq!(mt.next_u32(), 3_499_211_612);
        assert_eq!(mt.next_u32(), 581_869_302);
        let mut mt = Mt19937::new(5489);
        let tenth_thousand = (0..10_000).map(|_| mt.next_u32()).last();
        assert_eq!(tenth_thousand, Some(4_123_659_995));
    }

    #[test]
    fn fill_gives_the_words_next_u32_gives() {
        // From every kind of position (fresh, mid-state, one word before and right at a
        // regeneration) and lengths across several regenerations.
        for skip in [0usize, 1, 300, 622, 623, 624, 625, 1247] {
            for len in [0usize, 1, 2, 623, 624, 625, 2000] {
                let (mut a, mut b) = (Mt19937::new(42), Mt19937::new(42));
                for _ in 0..skip {
                    a.next_u32();
                    b.next_u32();
                }
                let mut bulk = vec![0u32; len];
                a.fill_u32(&mut bulk);
                let single: Vec<u32> = (0..len).map(|_| b.next_u32()).collect();
                assert_eq!(bulk, single, "skip {skip} len {len}");
                assert_eq!((a.left, a.next), (b.left, b.next), "skip {skip} len {len}");
                assert_eq!(a.next_u32(), b.next_u32());
            }
        }
    }

    #[test]
    fn only_the_low_32_bits_seed_the_state() {
        let (mut a, mut b) = (Mt19937::new(7), Mt19937::new(7 + (1 << 32)));
        assert_eq!(a.next_u32(), b.next_u32());
        assert_ne!(a.seed, b.seed);
    }
}
