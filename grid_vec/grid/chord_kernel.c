/* The compiled kernel of grid_vec/grid/chord.py: chord-Newton power flows of rows that share
 * one topology, and their results, in one call (see chord.py for the method and the layout of
 * a plan's packed arrays).
 *
 * Why C: the kernel is a few loops over small arrays, called once per topology per step;
 * plain C built by `pip install` costs nothing at run time (no compilation on first use, no
 * cache on disk, nothing loaded but this module) and needs only the compiler that building
 * Python extensions already needs. It reads and writes numpy arrays through the buffer
 * protocol (C-contiguous, checked by chord.py before the call): no numpy headers.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <complex.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef double complex cplx;

enum { HEADER = 13 };

typedef struct {
    int64_t n_bus, nnz, a, npq, nlx, nux, m, nb, nl, ng, ns, slack_bus, slack_gen;
    const int64_t *indptr, *indices, *pvpq, *pq, *Lp, *Li, *Up, *Ui, *perm_r, *perm_c;
    const int64_t *bus_active, *or_bus, *ex_bus, *load_bus, *gen_bus, *storage_bus;
    double sn, tol;
    const double *Lx, *Ux, *Ud, *vn, *q_share, *q_fixed;
    const cplx *data, *y11, *y12, *y21, *y22;
} Plan;

/* Unpack a plan (chord._pack's layout); 0 on success, -1 when the sizes do not add up. */
static int unpack(Plan *p, const int64_t *ints, Py_ssize_t n_ints, const double *reals,
                  Py_ssize_t n_reals, const cplx *c, Py_ssize_t n_cplx) {
    if (n_ints < HEADER) return -1;
    p->n_bus = ints[0]; p->nnz = ints[1]; p->a = ints[2]; p->npq = ints[3]; p->nlx = ints[4];
    p->nux = ints[5]; p->m = ints[6]; p->nb = ints[7]; p->nl = ints[8]; p->ng = ints[9];
    p->ns = ints[10]; p->slack_bus = ints[11]; p->slack_gen = ints[12];
    const int64_t *o = ints + HEADER;
    p->indptr = o; o += p->n_bus + 1;
    p->indices = o; o += p->nnz;
    p->pvpq = o; o += p->a;
    p->pq = o; o += p->npq;
    p->Lp = o; o += p->m + 1;
    p->Li = o; o += p->nlx;
    p->Up = o; o += p->m + 1;
    p->Ui = o; o += p->nux;
    p->perm_r = o; o += p->m;
    p->perm_c = o; o += p->m;
    p->bus_active = o; o += p->n_bus;
    p->or_bus = o; o += p->nb;
    p->ex_bus = o; o += p->nb;
    p->load_bus = o; o += p->nl;
    p->gen_bus = o; o += p->ng;
    p->storage_bus = o; o += p->ns;
    if (o - ints != n_ints) return -1;
    p->sn = reals[0]; p->tol = reals[1];
    const double *r = reals + 2;
    p->Lx = r; r += p->nlx;
    p->Ux = r; r += p->nux;
    p->Ud = r; r += p->m;
    p->vn = r; r += p->n_bus;
    p->q_share = r; r += p->ng;
    p->q_fixed = r; r += p->ng;
    if (r - reals != n_reals) return -1;
    p->data = c; p->y11 = c + p->nnz; p->y12 = p->y11 + p->nb; p->y21 = p->y12 + p->nb;
    p->y22 = p->y21 + p->nb;
    if (p->y22 + p->nb - c != n_cplx) return -1;
    if (p->m != p->a + p->npq) return -1;
    return 0;
}

/* current = Y v (Ybus as CSR). */
static void ybus_times(const Plan *p, const cplx *v, cplx *current) {
    for (int64_t i = 0; i < p->n_bus; ++i) {
        cplx acc = 0;
        for (int64_t k = p->indptr[i]; k < p->indptr[i + 1]; ++k) acc += p->data[k] * v[p->indices[k]];
        current[i] = acc;
    }
}

/* current = Y v; F = [P(pvpq); Q(pq)] of v conj(current) - S; returns max |F|. */
static double mismatch(const Plan *p, const cplx *v, const cplx *S, cplx *current, double *F) {
    ybus_times(p, v, current);
    double worst = 0;
    for (int64_t r = 0; r < p->a; ++r) {
        int64_t i = p->pvpq[r];
        double x = creal(v[i] * conj(current[i]) - S[i]);
        F[r] = x;
        if (fabs(x) > worst || isnan(x)) worst = fabs(x);  /* a NaN stays: never "converged" */
    }
    for (int64_t r = 0; r < p->npq; ++r) {
        int64_t i = p->pq[r];
        double x = cimag(v[i] * conj(current[i]) - S[i]);
        F[p->a + r] = x;
        if (fabs(x) > worst || isnan(x)) worst = fabs(x);
    }
    return worst;
}

/* b <- J^-1 b with Pr J Pc = L U (scipy's splu factors as CSR rows; L unit lower). */
static void lu_solve(const Plan *p, double *b, double *y) {
    int64_t m = p->m;
    for (int64_t i = 0; i < m; ++i) y[p->perm_r[i]] = b[i];
    for (int64_t i = 0; i < m; ++i) {
        double acc = y[i];
        for (int64_t k = p->Lp[i]; k < p->Lp[i + 1]; ++k) acc -= p->Lx[k] * y[p->Li[k]];
        y[i] = acc;
    }
    for (int64_t i = m - 1; i >= 0; --i) {
        double acc = y[i];
        for (int64_t k = p->Up[i]; k < p->Up[i + 1]; ++k) acc -= p->Ux[k] * y[p->Ui[k]];
        y[i] = acc / p->Ud[i];
    }
    for (int64_t i = 0; i < m; ++i) b[i] = y[p->perm_c[i]];
}

/* |z| without hypot's guard against overflow (a voltage or a flow is far from overflowing):
 * the kernel takes thousands of magnitudes per row, and hypot costs several times more. */
static inline double magnitude(cplx z) {
    double re = creal(z), im = cimag(z);
    return sqrt(re * re + im * im);
}

/* e^(i d). A chord step turns a voltage by a small angle, whose sine and cosine the first
 * terms of their series give to the last bit (the next term is below 1e-19 for |d| <= 0.05):
 * far cheaper than the library's trigonometry, which takes the larger turns. */
static inline cplx turn(double d) {
    if (fabs(d) > 0.05) return cos(d) + I * sin(d);
    double d2 = d * d;
    double c = 1 - d2 / 2 * (1 - d2 / 12 * (1 - d2 / 30 * (1 - d2 / 56)));
    double s = d * (1 - d2 / 6 * (1 - d2 / 20 * (1 - d2 / 42 * (1 - d2 / 72))));
    return c + I * s;
}

/* Chord iterations on one row (v in place): the iterations taken, -1 when not converged
 * within kmax (v is then spoilt). A step changes the angles of the PV and PQ buses and the
 * magnitudes of the PQ buses; it is applied to v as a turn and a scaling, so that no angle
 * is ever read back from v (no atan2, no exponential per bus and iteration). */
static int64_t chord_one(const Plan *p, const cplx *S, cplx *v, int64_t kmax, cplx *current,
                         double *F, double *y, double *vm) {
    for (int64_t k = 0; k < p->npq; ++k) vm[k] = magnitude(v[p->pq[k]]);
    for (int64_t it = 0; it <= kmax; ++it) {
        double worst = mismatch(p, v, S, current, F);
        if (worst < p->tol) return it;
        if (it == kmax || !isfinite(worst)) return -1;  /* a blown-up iterate never recovers */
        lu_solve(p, F, y);
        for (int64_t k = 0; k < p->a; ++k) v[p->pvpq[k]] *= turn(-F[k]);
        for (int64_t k = 0; k < p->npq; ++k) {
            double now = vm[k] - F[p->a + k];
            v[p->pq[k]] *= now / vm[k];
            vm[k] = now;
        }
    }
    return -1;
}

/* One solved row's results into o, in FLOW_FIELDS order and grid_vec's units. */
static void row_flows(const Plan *p, const double *inj, const double *storage_p, const cplx *S,
                      cplx *v, cplx *need, double *o) {
    int64_t nb = p->nb, nl = p->nl, ng = p->ng, ns = p->ns;
    double sn = p->sn, sqrt3 = sqrt(3.0);
    for (int64_t i = 0; i < p->n_bus; ++i)
        if (!p->bus_active[i]) v[i] = 0;  /* a bus out of the power flow reports no voltage */
    /* what each bus still needs from its PV generators (Q) or the slack (P), MW / MVAr */
    ybus_times(p, v, need);
    for (int64_t i = 0; i < p->n_bus; ++i) need[i] = (v[i] * conj(need[i]) - S[i]) * sn;
    for (int side = 0; side < 2; ++side) {  /* p, q, v, a of the origins, then extremities */
        double *base = o + 4 * nb * side;
        for (int64_t j = 0; j < nb; ++j) {
            int64_t here = side ? p->ex_bus[j] : p->or_bus[j];
            int64_t there = side ? p->or_bus[j] : p->ex_bus[j];
            if (here < 0) {
                base[j] = base[nb + j] = base[2 * nb + j] = base[3 * nb + j] = 0;
                continue;
            }
            cplx current = side ? p->y22[j] * v[here] + p->y21[j] * v[there]
                                : p->y11[j] * v[here] + p->y12[j] * v[there];
            cplx s = v[here] * conj(current) * sn;
            double v_kv = magnitude(v[here]) * p->vn[here];
            base[j] = creal(s);
            base[nb + j] = cimag(s);
            base[2 * nb + j] = v_kv;
            base[3 * nb + j] = v_kv > 0 ? magnitude(s) / (sqrt3 * v_kv) * 1000.0 : 0.0;
        }
    }
    double *k = o + 8 * nb;
    for (int64_t j = 0; j < nl; ++j) {
        int64_t b = p->load_bus[j];
        k[j] = b >= 0 ? inj[j] : 0.0;
        k[nl + j] = b >= 0 ? inj[nl + j] : 0.0;
        k[2 * nl + j] = b >= 0 ? magnitude(v[b]) * p->vn[b] : 0.0;
    }
    k += 3 * nl;
    for (int64_t j = 0; j < ng; ++j) {
        int64_t b = p->gen_bus[j];
        if (b < 0) {
            k[j] = k[ng + j] = k[2 * ng + j] = 0;
            continue;
        }
        double gen_p = inj[2 * nl + j];
        if (j == p->slack_gen) gen_p += creal(need[p->slack_bus]);
        k[j] = gen_p;
        k[ng + j] = cimag(need[b]) * p->q_share[j] + p->q_fixed[j];
        k[2 * ng + j] = magnitude(v[b]) * p->vn[b];
    }
    k += 3 * ng;
    for (int64_t j = 0; j < ns; ++j) {
        int64_t b = p->storage_bus[j];
        k[j] = b >= 0 ? storage_p[j] : 0.0;
        k[ns + j] = 0;
        k[2 * ns + j] = b >= 0 ? magnitude(v[b]) * p->vn[b] : 0.0;
        k[3 * ns + j] = b >= 0 ? carg(v[b]) : 0.0;
    }
}

/* solve(ints, reals, cplx, injections, storage_p, V, out, kmax, iters, rows) */
static PyObject *solve(PyObject *self, PyObject *args) {
    Py_buffer b_ints, b_reals, b_cplx, b_inj, b_sto, b_v, b_out, b_it;
    Py_ssize_t kmax, rows;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*w*w*nw*n", &b_ints, &b_reals, &b_cplx, &b_inj, &b_sto,
                          &b_v, &b_out, &kmax, &b_it, &rows))
        return NULL;
    PyObject *result = NULL;
    Plan p;
    cplx *work = NULL;
    double *fwork = NULL;
    if (unpack(&p, b_ints.buf, b_ints.len / 8, b_reals.buf, b_reals.len / 8, b_cplx.buf,
               b_cplx.len / (Py_ssize_t)sizeof(cplx)) != 0) {
        PyErr_SetString(PyExc_ValueError, "a chord plan whose sizes do not add up");
        goto done;
    }
    Py_ssize_t n_inj = 2 * p.nl + p.ng;
    Py_ssize_t n_out = 8 * p.nb + 3 * p.nl + 3 * p.ng + 4 * p.ns;
    if (b_inj.len != rows * n_inj * 8 || b_sto.len != rows * p.ns * 8 ||
        b_v.len != rows * p.n_bus * (Py_ssize_t)sizeof(cplx) || b_out.len != rows * n_out * 8 ||
        b_it.len != rows * 8) {
        PyErr_SetString(PyExc_ValueError, "chord arrays of the wrong sizes for the plan");
        goto done;
    }
    work = malloc(3 * p.n_bus * sizeof(cplx));
    fwork = malloc((2 * p.m + p.npq + 1) * sizeof(double));
    if (!work || !fwork) {
        PyErr_NoMemory();
        goto done;
    }
    cplx *S = work, *current = work + p.n_bus, *need = work + 2 * p.n_bus;
    double *F = fwork, *y = fwork + p.m, *vm = fwork + 2 * p.m;
    const double *inj = b_inj.buf, *sto = b_sto.buf;
    cplx *V = b_v.buf;
    double *out = b_out.buf;
    int64_t *iters = b_it.buf;
    double inv_sn = 1.0 / p.sn;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; ++r) {
        const double *row_inj = inj + r * n_inj, *row_sto = sto + r * p.ns;
        cplx *v = V + r * p.n_bus;
        /* bus injections, p.u.: generation minus consumption (a PV generator's reactive power
         * is a result; a static generator's is its fixed setpoint) */
        for (int64_t i = 0; i < p.n_bus; ++i) S[i] = 0;
        for (int64_t j = 0; j < p.nl; ++j)
            if (p.load_bus[j] >= 0) S[p.load_bus[j]] -= (row_inj[j] + I * row_inj[p.nl + j]) * inv_sn;
        for (int64_t j = 0; j < p.ng; ++j)
            if (p.gen_bus[j] >= 0) S[p.gen_bus[j]] += (row_inj[2 * p.nl + j] + I * p.q_fixed[j]) * inv_sn;
        for (int64_t j = 0; j < p.ns; ++j)
            if (p.storage_bus[j] >= 0) S[p.storage_bus[j]] -= row_sto[j] * inv_sn;
        int64_t it = chord_one(&p, S, v, kmax, current, F, y, vm);
        if (it < 0 && kmax > 0) {
            iters[r] = -1;
            continue;
        }
        iters[r] = it < 0 ? 0 : it;
        row_flows(&p, row_inj, row_sto, S, v, need, out + r * n_out);
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    free(work);
    free(fwork);
    PyBuffer_Release(&b_ints);
    PyBuffer_Release(&b_reals);
    PyBuffer_Release(&b_cplx);
    PyBuffer_Release(&b_inj);
    PyBuffer_Release(&b_sto);
    PyBuffer_Release(&b_v);
    PyBuffer_Release(&b_out);
    PyBuffer_Release(&b_it);
    return result;
}

static PyMethodDef methods[] = {
    {"solve", solve, METH_VARARGS,
     "solve(ints, reals, cplx, injections, storage_p, V, out, kmax, iters, rows): chord-solve "
     "rows of one plan in place (see grid_vec.grid.chord.solve_rows)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "chord_kernel", NULL, -1, methods};

PyMODINIT_FUNC PyInit_chord_kernel(void) { return PyModule_Create(&module); }
