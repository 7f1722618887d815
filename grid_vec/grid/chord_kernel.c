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

#include "flow_results.h"

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

/* The part of a plan its rows' results read. */
static FlowGrid flow_grid_of(const Plan *p) {
    FlowGrid g = {p->n_bus, p->nb, p->nl, p->ng, p->ns, p->slack_bus, p->slack_gen,
                  p->indptr, p->indices, p->data, p->bus_active, p->or_bus, p->ex_bus,
                  p->load_bus, p->gen_bus, p->storage_bus, p->sn, p->vn, p->q_share,
                  p->q_fixed, p->y11, p->y12, p->y21, p->y22};
    return g;
}

/* Rows are iterated LANES at a time, interleaved: bus (or unknown) i of lane l sits at
 * [i * L + l] (L lanes: LANES, fewer in the last block), real and imaginary parts apart. The
 * triangular solves of one row are a chain of dependent products; LANES rows side by side turn
 * each product into LANES independent ones, which the processor overlaps (and the compiler
 * vectorises). Each lane does its own row's arithmetic only, in the same order whatever the
 * other lanes hold (no fused multiply-add, see setup.py), so a row's result never depends on
 * the rows beside it or on their number. */
enum { LANES = 8 };

/* The work arrays of one block of lanes. */
typedef struct {
    int L;                                /* its lanes: LANES, or fewer for the last rows */
    double *vr, *vi, *sr, *si, *cr, *ci;  /* (n_bus, L): voltage, injection, Y v */
    double *F, *y;                        /* (m, L): mismatch / step, LU scratch */
    double *vm;                           /* (npq, L): the PQ buses' magnitudes */
} Block;

/* F = [P(pvpq); Q(pq)] of v conj(Y v) - S for every lane; worst[l] = max |F| of lane l (a NaN
 * stays, so that a blown-up lane is never "converged"). */
static void block_mismatch(const Plan *p, const Block *b, double *worst) {
    const int L = b->L;
    for (int64_t i = 0; i < p->n_bus; ++i) {
        double *cr = b->cr + i * L, *ci = b->ci + i * L;
        for (int l = 0; l < L; ++l) cr[l] = ci[l] = 0;
        for (int64_t k = p->indptr[i]; k < p->indptr[i + 1]; ++k) {
            double yr = creal(p->data[k]), yi = cimag(p->data[k]);
            const double *vr = b->vr + p->indices[k] * L, *vi = b->vi + p->indices[k] * L;
            for (int l = 0; l < L; ++l) {
                cr[l] += yr * vr[l] - yi * vi[l];
                ci[l] += yr * vi[l] + yi * vr[l];
            }
        }
    }
    for (int l = 0; l < L; ++l) worst[l] = 0;
    for (int64_t r = 0; r < p->a + p->npq; ++r) {
        int is_q = r >= p->a;
        int64_t i = is_q ? p->pq[r - p->a] : p->pvpq[r];
        const double *vr = b->vr + i * L, *vi = b->vi + i * L;
        const double *cr = b->cr + i * L, *ci = b->ci + i * L;
        const double *sr = b->sr + i * L, *si = b->si + i * L;
        double *F = b->F + r * L;
        for (int l = 0; l < L; ++l)  /* v conj(c) = (vr cr + vi ci) + j (vi cr - vr ci) */
            F[l] = is_q ? vi[l] * cr[l] - vr[l] * ci[l] - si[l]
                        : vr[l] * cr[l] + vi[l] * ci[l] - sr[l];
        for (int l = 0; l < L; ++l)
            if (fabs(F[l]) > worst[l] || isnan(F[l])) worst[l] = fabs(F[l]);
    }
}

/* F <- J^-1 F in every lane, with Pr J Pc = L U (scipy's splu factors as CSR rows; L unit
 * lower). */
static void block_lu_solve(const Plan *p, const Block *b) {
    const int L = b->L;
    int64_t m = p->m;
    double *F = b->F, *y = b->y;
    for (int64_t i = 0; i < m; ++i)
        memcpy(y + p->perm_r[i] * L, F + i * L, L * sizeof(double));
    for (int64_t i = 0; i < m; ++i) {
        double *yi = y + i * L;
        for (int64_t k = p->Lp[i]; k < p->Lp[i + 1]; ++k) {
            double x = p->Lx[k];
            const double *yk = y + p->Li[k] * L;
            for (int l = 0; l < L; ++l) yi[l] -= x * yk[l];
        }
    }
    for (int64_t i = m - 1; i >= 0; --i) {
        double *yi = y + i * L;
        for (int64_t k = p->Up[i]; k < p->Up[i + 1]; ++k) {
            double x = p->Ux[k];
            const double *yk = y + p->Ui[k] * L;
            for (int l = 0; l < L; ++l) yi[l] -= x * yk[l];
        }
        double inverse = 1.0 / p->Ud[i];  /* one division per unknown, not per lane */
        for (int l = 0; l < L; ++l) yi[l] *= inverse;
    }
    for (int64_t i = 0; i < m; ++i)
        memcpy(F + i * L, y + p->perm_c[i] * L, L * sizeof(double));
}

enum { RUNNING, CONVERGED, FAILED };

/* Chord iterations on the block's lanes (v in place), each until its own mismatch is below the
 * tolerance: it[l] = the iterations lane l took, -1 when it did not converge within kmax (its v
 * is then spoilt). A step changes the angles of the PV and PQ buses and the magnitudes of the
 * PQ buses; it is applied to v as a turn and a scaling, so no angle is ever read back from v
 * (no atan2, no exponential per bus and iteration). A lane that has stopped takes a zero step,
 * which leaves its v bitwise as it is. */
static void block_chord(const Plan *p, const Block *b, int64_t kmax, int64_t *it) {
    const int L = b->L;
    int state[LANES];
    double worst[LANES];
    for (int l = 0; l < L; ++l) state[l] = RUNNING;
    for (int64_t k = 0; k < p->npq; ++k) {
        int64_t i = p->pq[k];
        for (int l = 0; l < L; ++l) {
            double vr = b->vr[i * L + l], vi = b->vi[i * L + l];
            b->vm[k * L + l] = sqrt(vr * vr + vi * vi);
        }
    }
    for (int64_t n = 0;; ++n) {
        block_mismatch(p, b, worst);
        int running = 0;
        for (int l = 0; l < L; ++l) {
            if (state[l] != RUNNING) continue;
            if (worst[l] < p->tol) {
                state[l] = CONVERGED;
                it[l] = n;
            } else if (n == kmax || !isfinite(worst[l])) {  /* a blown-up iterate never recovers */
                state[l] = FAILED;
                it[l] = -1;
            } else {
                running = 1;
            }
        }
        if (!running) return;
        for (int64_t r = 0; r < p->m; ++r)
            for (int l = 0; l < L; ++l)
                if (state[l] != RUNNING) b->F[r * L + l] = 0;
        block_lu_solve(p, b);
        for (int64_t k = 0; k < p->a; ++k) {
            int64_t i = p->pvpq[k];
            double *vr = b->vr + i * L, *vi = b->vi + i * L;
            for (int l = 0; l < L; ++l) {
                double c, s;
                turn(-b->F[k * L + l], &c, &s);
                double re = vr[l] * c - vi[l] * s;
                vi[l] = vr[l] * s + vi[l] * c;
                vr[l] = re;
            }
        }
        for (int64_t k = 0; k < p->npq; ++k) {
            int64_t i = p->pq[k];
            double *vr = b->vr + i * L, *vi = b->vi + i * L, *vm = b->vm + k * L;
            const double *step = b->F + (p->a + k) * L;
            for (int l = 0; l < L; ++l) {
                double now = vm[l] - step[l];
                double ratio = now != vm[l] ? now / vm[l] : 1.0;
                vr[l] *= ratio;
                vi[l] *= ratio;
                vm[l] = now;
            }
        }
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
    double *work = NULL;
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
    /* the block's lanes, then one row's bus injections and bus needs (complex, for row_flows) */
    size_t n_work = LANES * (6 * p.n_bus + 2 * p.m + p.npq) + 2 * 2 * p.n_bus * LANES;
    work = malloc(n_work * sizeof(double));
    if (!work) {
        PyErr_NoMemory();
        goto done;
    }
    Block blk;
    double *w = work;
    blk.vr = w; w += LANES * p.n_bus;
    blk.vi = w; w += LANES * p.n_bus;
    blk.sr = w; w += LANES * p.n_bus;
    blk.si = w; w += LANES * p.n_bus;
    blk.cr = w; w += LANES * p.n_bus;
    blk.ci = w; w += LANES * p.n_bus;
    blk.F = w; w += LANES * p.m;
    blk.y = w; w += LANES * p.m;
    blk.vm = w; w += LANES * p.npq;
    cplx *S = (cplx *)w, *need = S + p.n_bus * LANES;  /* S: (LANES, n_bus), row by row */
    const double *inj = b_inj.buf, *sto = b_sto.buf;
    cplx *V = b_v.buf;
    double *out = b_out.buf;
    int64_t *iters = b_it.buf;
    double inv_sn = 1.0 / p.sn;
    FlowGrid grid = flow_grid_of(&p);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t first = 0; first < rows; first += LANES) {
        int L = rows - first < LANES ? (int)(rows - first) : LANES;
        blk.L = L;
        for (int l = 0; l < L; ++l) {
            Py_ssize_t r = first + l;
            const double *row_inj = inj + r * n_inj, *row_sto = sto + r * p.ns;
            const cplx *v = V + r * p.n_bus;
            cplx *Sl = S + l * p.n_bus;
            /* bus injections, p.u.: generation minus consumption (a PV generator's reactive
             * power is a result; a static generator's is its fixed setpoint) */
            for (int64_t i = 0; i < p.n_bus; ++i) Sl[i] = 0;
            for (int64_t j = 0; j < p.nl; ++j)
                if (p.load_bus[j] >= 0)
                    Sl[p.load_bus[j]] -= (row_inj[j] + I * row_inj[p.nl + j]) * inv_sn;
            for (int64_t j = 0; j < p.ng; ++j)
                if (p.gen_bus[j] >= 0)
                    Sl[p.gen_bus[j]] += (row_inj[2 * p.nl + j] + I * p.q_fixed[j]) * inv_sn;
            for (int64_t j = 0; j < p.ns; ++j)
                if (p.storage_bus[j] >= 0) Sl[p.storage_bus[j]] -= row_sto[j] * inv_sn;
            for (int64_t i = 0; i < p.n_bus; ++i) {
                blk.vr[i * L + l] = creal(v[i]);
                blk.vi[i * L + l] = cimag(v[i]);
                blk.sr[i * L + l] = creal(Sl[i]);
                blk.si[i * L + l] = cimag(Sl[i]);
            }
        }
        int64_t it[LANES];
        block_chord(&p, &blk, kmax, it);
        for (int l = 0; l < L; ++l) {
            Py_ssize_t r = first + l;
            cplx *v = V + r * p.n_bus;
            for (int64_t i = 0; i < p.n_bus; ++i)
                v[i] = blk.vr[i * L + l] + I * blk.vi[i * L + l];
            if (it[l] < 0 && kmax > 0) {
                iters[r] = -1;
                continue;
            }
            iters[r] = it[l] < 0 ? 0 : it[l];
            row_flows(&grid, inj + r * n_inj, sto + r * p.ns, S + l * p.n_bus, v, need,
                      out + r * n_out);
        }
    }
    Py_END_ALLOW_THREADS
    result = Py_None;
    Py_INCREF(result);
done:
    free(work);
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
