//! `einsum`: the equation is parsed and checked with PyTorch's messages, then lowered to
//! differentiable views and products: `diagonal` for a subscript repeated within an
//! operand, `sum` for a subscript that only one operand has and the output lacks, and one
//! batched `matmul` per further operand (permute + reshape to `(batch, m, k) @ (batch,
//! k, n)`). Its backward is that of those ops, so double backward works.

use crate::error::{Error, Result};
use crate::variable::Variable;

/// Subscripts `A-Z` are labels 0..26, `a-z` 26..52 (PyTorch's order, which sorts the
/// implicit output); the dims covered by an ellipsis get labels from 52 on.
const LETTERS: usize = 52;

fn invalid(message: String) -> Error {
    Error::InvalidArgument(format!("einsum(): {message}"))
}

fn letter_label(c: char) -> Option<usize> {
    match c {
        'A'..='Z' => Some(c as usize - 'A' as usize),
        'a'..='z' => Some(c as usize - 'a' as usize + 26),
        _ => None,
    }
}

fn label_char(label: usize) -> char {
    match label {
        0..26 => (b'A' + label as u8) as char,
        _ => (b'a' + (label - 26) as u8) as char,
    }
}

/// One side's subscripts: the letter labels in order, with the ellipsis position.
#[derive(Default)]
struct Term {
    labels: Vec<usize>,
    /// Where `...` stands among `labels`, if present.
    ellipsis: Option<usize>,
}

/// Parses the subscripts of one term; `start` is its offset in the equation (for
/// PyTorch's "invalid subscript given at index" message); `operand` names the term.
fn parse_term(text: &str, start: usize, operand: Option<usize>) -> Result<Term> {
    let mut term = Term::default();
    let mut dots = 0;
    let who = || match operand {
        Some(i) => format!("operand {i}"),
        None => "output".to_string(),
    };
    for (offset, c) in text.char_indices() {
        if c == '.' {
            if term.ellipsis.is_some() {
                return Err(invalid(format!(
                    "found '.' for {} for which an ellipsis was already found",
                    who()
                )));
            }
            dots += 1;
            if dots == 3 {
                term.ellipsis = Some(term.labels.len());
                dots = 0;
            }
            continue;
        }
        if dots != 0 {
            return Err(invalid(format!(
                "found '.' for {} that is not part of any ellipsis (...)",
                who()
            )));
        }
        if c.is_whitespace() {
            continue;
        }
        match letter_label(c) {
            Some(l) => term.labels.push(l),
            None => {
                return Err(invalid(format!(
                    "invalid subscript given at index {} in the equation string, subscripts must be in [a-zA-Z]",
                    start + offset
                )))
            }
        }
    }
    if dots != 0 {
        return Err(invalid(format!(
            "found '.' for {} that is not part of any ellipsis (...)",
            who()
        )));
    }
    Ok(term)
}

impl Variable {
    /// Einstein summation over `operands` as `equation` says (`torch.einsum`): explicit
    /// (`"ij,jk->ik"`) or implicit output (the subscripts seen once, sorted), repeated
    /// subscripts (traces, diagonals), `...` for broadcast batch dims, and size-1 dims
    /// broadcasting against other operands.
    pub fn einsum(equation: &str, operands: &[Variable]) -> Result<Variable> {
        if operands.is_empty() {
            return Err(invalid("must provide at least one operand".into()));
        }
        let (lhs, rhs) = match equation.find("->") {
            Some(p) => (&equation[..p], Some((p + 2, &equation[p + 2..]))),
            None => (equation, None),
        };
        let mut terms = Vec::new();
        let mut start = 0;
        for (i, text) in lhs.split(',').enumerate() {
            terms.push(parse_term(text, start, Some(i))?);
            start += text.len() + 1;
        }
        if terms.len() > operands.len() {
            return Err(invalid(
                "fewer operands were provided than specified in the equation".into(),
            ));
        }
        if terms.len() < operands.len() {
            return Err(invalid(
                "more operands were provided than specified in the equation".into(),
            ));
        }

        // Each operand's labels, dim by dim, with its ellipsis dims numbered from the
        // right (so they broadcast like batch dims).
        let mut ellipsis_dims = 0;
        for (i, (term, x)) in terms.iter().zip(operands).enumerate() {
            let n = term.labels.len();
            match term.ellipsis {
                None if n != x.dim() => {
                    return Err(invalid(format!(
                        "the number of subscripts in the equation ({n}) does not match the number of dimensions ({}) for operand {i} and no ellipsis was given",
                        x.dim()
                    )))
                }
                Some(_) if n > x.dim() => {
                    return Err(invalid(format!(
                        "the number of subscripts in the equation ({n}) is more than the number of dimensions ({}) for operand {i}",
                        x.dim()
                    )))
                }
                Some(_) => ellipsis_dims = ellipsis_dims.max(x.dim() - n),
                None => {}
            }
        }
        let any_ellipsis = terms.iter().any(|t| t.ellipsis.is_some());
        let mut dim_labels: Vec<Vec<usize>> = Vec::with_capacity(terms.len());
        for (term, x) in terms.iter().zip(operands) {
            let mut labels = term.labels.clone();
            if let Some(at) = term.ellipsis {
                let covered = x.dim() - term.labels.len();
                let first = LETTERS + ellipsis_dims - covered;
                labels.splice(at..at, first..first + covered);
            }
            dim_labels.push(labels);
        }

        // Label sizes: equal within an operand, equal or 1 across operands.
        let total_labels = LETTERS + ellipsis_dims;
        let mut size: Vec<Option<usize>> = vec![None; total_labels];
        // Operands that have each label, and its occurrences over all terms (the
        // implicit output keeps the labels that occur once).
        let mut count = vec![0usize; total_labels];
        let mut occurrences = vec![0usize; total_labels];
        for (i, (labels, x)) in dim_labels.iter().zip(operands).enumerate() {
            let shape = x.shape();
            let mut own: Vec<Option<usize>> = vec![None; total_labels];
            for (d, &l) in labels.iter().enumerate() {
                let s = shape[d];
                occurrences[l] += 1;
                if let Some(prev) = own[l] {
                    if prev != s {
                        return Err(invalid(format!(
                            "subscript {} is repeated for operand {i} but the sizes don't match, {s} != {prev}",
                            label_char(l)
                        )));
                    }
                    continue;
                }
                own[l] = Some(s);
                count[l] += 1;
                match size[l] {
                    Some(prev) if prev != s && prev != 1 && s != 1 => {
                        return Err(invalid(if l < LETTERS {
                            format!(
                                "subscript {} has size {s} for operand {i} which does not broadcast with previously seen size {prev}",
                                label_char(l)
                            )
                        } else {
                            let covered = x.dim() - terms[i].labels.len();
                            format!(
                                "dimension {} covered by ellipsis in operand {i}has size {s} which does not broadcast with previously seen ellipsis with size {prev} for the respective dimension",
                                l - (LETTERS + ellipsis_dims - covered)
                            )
                        }));
                    }
                    Some(prev) if prev != 1 => {}
                    _ => size[l] = Some(s),
                }
            }
        }

        // The output's labels.
        let output: Vec<usize> = match rhs {
            Some((start, text)) => {
                let term = parse_term(text, start, None)?;
                let mut seen = vec![false; total_labels];
                for &l in &term.labels {
                    if count[l] == 0 {
                        return Err(invalid(format!(
                            "output subscript {} does not appear in the equation for any input operand",
                            label_char(l)
                        )));
                    }
                    if std::mem::replace(&mut seen[l], true) {
                        return Err(invalid(format!(
                            "output subscript {} appears more than once in the output",
                            label_char(l)
                        )));
                    }
                }
                let mut labels = term.labels;
                // Without `...` in the output, the ellipsis dims are summed.
                if let Some(at) = term.ellipsis {
                    labels.splice(at..at, LETTERS..total_labels);
                }
                labels
            }
            None => {
                let mut labels: Vec<usize> = Vec::new();
                if any_ellipsis {
                    labels.extend(LETTERS..total_labels);
                }
                labels.extend((0..LETTERS).filter(|&l| occurrences[l] == 1));
                labels
            }
        };

        // Global dim order: the output's labels, then the contracted ones.
        let mut order = output.clone();
        order.extend((0..total_labels).filter(|&l| count[l] > 0 && !output.contains(&l)));
        let mut position = vec![usize::MAX; total_labels];
        for (p, &l) in order.iter().enumerate() {
            position[l] = p;
        }
        let rank = order.len();
        let in_output = |l: usize| position[l] < output.len();

        // Every operand becomes a view with one dim per label of `order` (size 1 where
        // it lacks the label), after taking diagonals and summing labels it alone has.
        let mut aligned: Vec<Variable> = Vec::with_capacity(operands.len());
        for (x, labels) in operands.iter().zip(&dim_labels) {
            let mut x = x.clone();
            let mut labels = labels.clone();
            while let Some((p, q)) = (0..labels.len()).find_map(|p| {
                (p + 1..labels.len())
                    .find(|&q| labels[q] == labels[p])
                    .map(|q| (p, q))
            }) {
                x = x.diagonal(0, p as i64, q as i64)?;
                let l = labels[p];
                labels.remove(q);
                labels.remove(p);
                labels.push(l);
            }
            let mut dims: Vec<usize> = (0..labels.len()).collect();
            dims.sort_by_key(|&d| position[labels[d]]);
            let perm: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
            x = x.permute(&perm)?;
            let mut sizes = vec![1i64; rank];
            for (d, &src) in dims.iter().enumerate() {
                sizes[position[labels[src]]] = x.shape()[d] as i64;
            }
            x = x.reshape(&sizes)?;
            let alone: Vec<i64> = labels
                .iter()
                .filter(|&&l| count[l] == 1 && !in_output(l))
                .map(|&l| position[l] as i64)
                .collect();
            if !alone.is_empty() {
                x = x.sum_dims(&alone, true)?;
            }
            aligned.push(x);
        }

        let mut result = aligned[0].clone();
        for (step, b) in aligned.iter().enumerate().skip(1) {
            // A label is still needed when the output or a later operand has it.
            let needed = |p: usize| {
                p < output.len()
                    || dim_labels[step + 1..]
                        .iter()
                        .any(|ls| ls.contains(&order[p]))
            };
            let mut b = b.clone();
            let (mut sa, mut sb) = (result.shape(), b.shape());
            // A contracted dim that only one side has is summed on that side first.
            let only_a: Vec<i64> = (0..rank)
                .filter(|&p| !needed(p) && sa[p] != 1 && sb[p] == 1)
                .map(|p| p as i64)
                .collect();
            let only_b: Vec<i64> = (0..rank)
                .filter(|&p| !needed(p) && sa[p] == 1 && sb[p] != 1)
                .map(|p| p as i64)
                .collect();
            if !only_a.is_empty() {
                result = result.sum_dims(&only_a, true)?;
                sa = result.shape();
            }
            if !only_b.is_empty() {
                b = b.sum_dims(&only_b, true)?;
                sb = b.shape();
            }
            let (mut batch, mut left, mut right, mut contracted, mut ones) =
                (vec![], vec![], vec![], vec![], vec![]);
            for p in 0..rank {
                match (sa[p] != 1, sb[p] != 1, needed(p)) {
                    (true, true, true) => batch.push(p),
                    (true, true, false) => contracted.push(p),
                    (true, false, _) => left.push(p),
                    (false, true, _) => right.push(p),
                    (false, false, _) => ones.push(p),
                }
            }
            let prod =
                |s: &[usize], dims: &[usize]| dims.iter().map(|&p| s[p]).product::<usize>() as i64;
            let cat = |parts: &[&[usize]]| -> Vec<i64> {
                parts
                    .iter()
                    .flat_map(|p| p.iter())
                    .map(|&p| p as i64)
                    .collect()
            };
            let a3 = result
                .permute(&cat(&[&batch, &left, &contracted, &right, &ones]))?
                .reshape(&[prod(&sa, &batch), prod(&sa, &left), prod(&sa, &contracted)])?;
            let b3 = b
                .permute(&cat(&[&batch, &contracted, &right, &left, &ones]))?
                .reshape(&[prod(&sb, &batch), prod(&sb, &contracted), prod(&sb, &right)])?;
            let out_order = cat(&[&batch, &left, &right, &contracted, &ones]);
            let out_sizes: Vec<i64> = out_order
                .iter()
                .map(|&p| {
                    let p = p as usize;
                    match (contracted.contains(&p), sa[p]) {
                        (true, _) => 1,
                        // One side is 1 where they differ (checked above).
                        (false, 1) => sb[p] as i64,
                        (false, s) => s as i64,
                    }
                })
                .collect();
            let mut inverse = vec![0i64; rank];
            for (i, &p) in out_order.iter().enumerate() {
                inverse[p as usize] = i as i64;
            }
            result = a3.matmul(&b3)?.reshape(&out_sizes)?.permute(&inverse)?;
        }

        // Sum what is left outside the output (one operand: its labels not in the
        // output were summed above unless repeated in it), then drop those dims.
        let rest: Vec<i64> = (output.len()..rank)
            .filter(|&p| result.shape()[p] != 1)
            .map(|p| p as i64)
            .collect();
        if !rest.is_empty() {
            result = result.sum_dims(&rest, true)?;
        }
        let out_sizes: Vec<i64> = result.shape()[..output.len()]
            .iter()
            .map(|&s| s as i64)
            .collect();
        result.reshape(&out_sizes)
    }
}
