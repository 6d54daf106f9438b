//! Dense factorizations on one row-major `n × n` (or `m × n`) float64 matrix: LU with partial
//! pivoting (solve, inverse, determinant), Cholesky and Householder QR. kiln's `linalg_*`
//! ops run them per matrix of a batch, in float64 whatever the input's float dtype.
//!
//! Own code rather than a crate: these are the textbook algorithms (Golub & Van Loan), a
//! few hundred lines, and the crates that do them well (faer, nalgebra) would add more build
//! time than the rest of kiln's dependencies together.

/// LU factors of a square matrix: `P A = L U`, packed in one matrix (unit-diagonal `L`
/// below the diagonal, `U` on and above), with the row permutation and its sign.
pub struct Lu {
    n: usize,
    lu: Vec<f64>,
    perm: Vec<usize>,
    sign: f64,
    singular: bool,
}

impl Lu {
    /// Factors `a` (`n × n`, row-major) with partial pivoting. A zero pivot marks the matrix
    /// singular (the factorization still completes, as LAPACK's `getrf`).
    pub fn new(a: &[f64], n: usize) -> Lu {
        let mut lu = a.to_vec();
        let mut perm: Vec<usize> = (0..n).collect();
        let (mut sign, mut singular) = (1.0, false);
        for k in 0..n {
            let p = (k..n)
                .max_by(|&i, &j| lu[i * n + k].abs().total_cmp(&lu[j * n + k].abs()))
                .unwrap_or(k);
            if p != k {
                for c in 0..n {
                    lu.swap(k * n + c, p * n + c);
                }
                perm.swap(k, p);
                sign = -sign;
            }
            let pivot = lu[k * n + k];
            if pivot == 0.0 {
                singular = true;
                continue;
            }
            for i in k + 1..n {
                let f = lu[i * n + k] / pivot;
                lu[i * n + k] = f;
                for c in k + 1..n {
                    lu[i * n + c] -= f * lu[k * n + c];
                }
            }
        }
        Lu {
            n,
            lu,
            perm,
            sign,
            singular,
        }
    }

    /// Whether a pivot was exactly zero.
    pub fn is_singular(&self) -> bool {
        self.singular
    }

    /// The first zero pivot's 1-based position (LAPACK's `info`), if any.
    pub fn zero_pivot(&self) -> Option<usize> {
        (0..self.n)
            .find(|&k| self.lu[k * self.n + k] == 0.0)
            .map(|k| k + 1)
    }

    /// `det(A)`: the product of `U`'s diagonal times the permutation's sign.
    pub fn det(&self) -> f64 {
        (0..self.n).fold(self.sign, |d, k| d * self.lu[k * self.n + k])
    }

    /// `(sign, log|det|)`; `(0, -inf)` for a singular matrix.
    pub fn slogdet(&self) -> (f64, f64) {
        if self.singular {
            return (0.0, f64::NEG_INFINITY);
        }
        let mut sign = self.sign;
        let mut log = 0.0;
        for k in 0..self.n {
            let u = self.lu[k * self.n + k];
            sign *= u.signum();
            log += u.abs().ln();
        }
        (sign, log)
    }

    /// Solves `A X = B` for `B` of `n × k` (row-major), in place.
    pub fn solve(&self, b: &mut [f64], k: usize) {
        let n = self.n;
        let src = b.to_vec();
        for (i, &p) in self.perm.iter().enumerate() {
            b[i * k..(i + 1) * k].copy_from_slice(&src[p * k..(p + 1) * k]);
        }
        for c in 0..k {
            for i in 0..n {
                let mut s = b[i * k + c];
                for j in 0..i {
                    s -= self.lu[i * n + j] * b[j * k + c];
                }
                b[i * k + c] = s;
            }
            for i in (0..n).rev() {
                let mut s = b[i * k + c];
                for j in i + 1..n {
                    s -= self.lu[i * n + j] * b[j * k + c];
                }
                b[i * k + c] = s / self.lu[i * n + i];
            }
        }
    }
}

/// The Cholesky factor `L` (lower triangular, `A = L Lᵀ`) of a symmetric positive-definite
/// matrix; only `a`'s lower triangle is read. `Err(k)` when the leading minor of order `k`
/// (1-based) is not positive-definite.
pub fn cholesky(a: &[f64], n: usize) -> Result<Vec<f64>, usize> {
    let mut l = vec![0.0; n * n];
    for j in 0..n {
        let mut d = a[j * n + j];
        for k in 0..j {
            d -= l[j * n + k] * l[j * n + k];
        }
        if d.is_nan() || d <= 0.0 {
            return Err(j + 1);
        }
        let d = d.sqrt();
        l[j * n + j] = d;
        for i in j + 1..n {
            let mut s = a[i * n + j];
            for k in 0..j {
                s -= l[i * n + k] * l[j * n + k];
            }
            l[i * n + j] = s / d;
        }
    }
    Ok(l)
}

/// QR of an `m × n` matrix by Householder reflections, `k = min(m, n)`, as LAPACK's
/// `geqrf` + `orgqr` compute it (so with LAPACK's signs, which PyTorch returns): reflector
/// `j` maps column `j` below the diagonal onto `beta e_j` with `beta = -sign(a_jj) ‖·‖`, and
/// is the identity when nothing below the diagonal is non-zero (that diagonal keeps its
/// sign). Reduced (`complete` false): `Q` is `m × k` with orthonormal columns, `R` is `k × n`
/// upper triangular. Complete: `Q` is `m × m` orthogonal and `R` is `m × n` (rows past `k`
/// zero).
pub fn qr(a: &[f64], m: usize, n: usize, complete: bool) -> (Vec<f64>, Vec<f64>) {
    let k = m.min(n);
    // Columns of Q and rows of R.
    let qc = if complete { m } else { k };
    let mut r = a.to_vec();
    // The reflectors H_j = I - tau_j v_j v_jᵀ, v_j zero above row j and 1 at it (`dlarfg`).
    let mut vs: Vec<(f64, Vec<f64>)> = Vec::with_capacity(k);
    for j in 0..k {
        let alpha = r[j * n + j];
        let xnorm = (j + 1..m)
            .map(|i| r[i * n + j] * r[i * n + j])
            .sum::<f64>()
            .sqrt();
        let mut v = vec![0.0; m];
        v[j] = 1.0;
        if xnorm == 0.0 {
            // H = I: the column is already upper triangular.
            vs.push((0.0, v));
            continue;
        }
        // Fortran's SIGN(x, alpha): the sign bit of alpha (so -0.0 counts as negative).
        let beta = -alpha.hypot(xnorm).copysign(alpha);
        let tau = (beta - alpha) / beta;
        let scale = 1.0 / (alpha - beta);
        for i in j + 1..m {
            v[i] = r[i * n + j] * scale;
        }
        r[j * n + j] = beta;
        for i in j + 1..m {
            r[i * n + j] = 0.0;
        }
        // Apply H to the columns right of j.
        for c in j + 1..n {
            let dot: f64 = (j..m).map(|i| v[i] * r[i * n + c]).sum();
            let f = tau * dot;
            for i in j..m {
                r[i * n + c] -= f * v[i];
            }
        }
        vs.push((tau, v));
    }
    // Q = H_0 H_1 ... H_{k-1} applied to the first qc columns of the identity (`orgqr`).
    let mut q = vec![0.0; m * qc];
    for i in 0..qc {
        q[i * qc + i] = 1.0;
    }
    for (j, (tau, v)) in vs.iter().enumerate().rev() {
        if *tau == 0.0 {
            continue;
        }
        for c in 0..qc {
            let dot: f64 = (j..m).map(|i| v[i] * q[i * qc + c]).sum();
            let f = tau * dot;
            for i in j..m {
                q[i * qc + c] -= f * v[i];
            }
        }
    }
    // R: the top qc rows, zero below the diagonal.
    let mut rr = vec![0.0; qc * n];
    for i in 0..k {
        for c in i..n {
            rr[i * n + c] = r[i * n + c];
        }
    }
    (q, rr)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matmul(a: &[f64], b: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
        let mut c = vec![0.0; n * m];
        for i in 0..n {
            for j in 0..m {
                c[i * m + j] = (0..k).map(|t| a[i * k + t] * b[t * m + j]).sum();
            }
        }
        c
    }

    #[test]
    fn lu_solves_and_determines() {
        let a = [2.0, 1.0, 1.0, 4.0, -6.0, 0.0, -2.0, 7.0, 2.0];
        let lu = Lu::new(&a, 3);
        assert!((lu.det() - (-16.0)).abs() < 1e-12);
        let mut b = vec![5.0, -2.0, 9.0];
        lu.solve(&mut b, 1);
        let back = matmul(&a, &b, 3, 3, 1);
        assert!(back
            .iter()
            .zip([5.0, -2.0, 9.0])
            .all(|(x, y)| (x - y).abs() < 1e-12));
    }

    #[test]
    fn singular_matrix_is_flagged() {
        let lu = Lu::new(&[1.0, 2.0, 2.0, 4.0], 2);
        assert!(lu.is_singular());
        assert_eq!(lu.det(), 0.0);
        assert_eq!(lu.slogdet(), (0.0, f64::NEG_INFINITY));
    }

    #[test]
    fn cholesky_reconstructs_and_rejects_indefinite() {
        let a = [4.0, 2.0, 2.0, 3.0];
        let l = cholesky(&a, 2).unwrap();
        let lt = [l[0], l[2], l[1], l[3]];
        let back = matmul(&l, &lt, 2, 2, 2);
        assert!(back.iter().zip(a).all(|(x, y)| (x - y).abs() < 1e-12));
        assert_eq!(cholesky(&[1.0, 2.0, 2.0, 1.0], 2), Err(2));
    }

    #[test]
    fn qr_is_orthonormal_times_upper() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, -1.0, 0.5, 2.0];
        let (q, r) = qr(&a, 4, 3, false);
        let back = matmul(&q, &r, 4, 3, 3);
        assert!(back.iter().zip(a).all(|(x, y)| (x - y).abs() < 1e-12));
        for i in 0..3 {
            // LAPACK's signs: -sign(a_jj) for a reflected column.
            assert!(i != 0 || r[0] < 0.0);
            for j in 0..3 {
                let dot: f64 = (0..4).map(|t| q[t * 3 + i] * q[t * 3 + j]).sum();
                assert!((dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn complete_qr_is_square_orthogonal_and_extends_the_reduced_one() {
        let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0, -1.0, 0.5, 2.0];
        let (q, r) = qr(&a, 4, 3, true);
        assert_eq!((q.len(), r.len()), (16, 12));
        let back = matmul(&q, &r, 4, 4, 3);
        assert!(back.iter().zip(a).all(|(x, y)| (x - y).abs() < 1e-12));
        assert!(
            r[9..].iter().all(|&x| x == 0.0),
            "rows past min(m, n) are zero"
        );
        for i in 0..4 {
            for j in 0..4 {
                let dot: f64 = (0..4).map(|t| q[t * 4 + i] * q[t * 4 + j]).sum();
                assert!((dot - if i == j { 1.0 } else { 0.0 }).abs() < 1e-12);
            }
        }
        let (qr_, _) = qr(&a, 4, 3, false);
        for row in 0..4 {
            for c in 0..3 {
                assert!((q[row * 4 + c] - qr_[row * 3 + c]).abs() < 1e-12);
            }
        }
    }
}
