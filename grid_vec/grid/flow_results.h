/* What the two compiled kernels of grid_vec/grid share (chord_kernel.c: rows of one topology;
 * newton_kernel.c: rows of any topology): how a step turns a voltage, and one implementation
 * of how flows, voltages, the slack's active power and the generators' reactive power follow
 * from a solution; included by both (static functions: each module its copy of the machine
 * code, one source). */
#ifndef GRID_VEC_FLOW_RESULTS_H
#define GRID_VEC_FLOW_RESULTS_H

#include <complex.h>
#include <math.h>
#include <stdint.h>

typedef double complex cplx;

/* cos and sin of d (both kernels: a Newton or chord step turns a voltage by a small angle), whose cosine and sine the
 * first terms of their series give to the last bit (the next term is below 1e-19 for
 * |d| <= 0.05): far cheaper than the library's trigonometry, which takes the larger turns. */
static inline void turn(double d, double *c, double *s) {
    if (fabs(d) > 0.05) {
        *c = cos(d);
        *s = sin(d);
        return;
    }
    double d2 = d * d;
    /* Horner's form with the coefficients as constants: products only, no division */
    *c = 1 + d2 * (-1.0 / 2 + d2 * (1.0 / 24 + d2 * (-1.0 / 720 + d2 * (1.0 / 40320))));
    *s = d * (1 + d2 * (-1.0 / 6 + d2 * (1.0 / 120 + d2 * (-1.0 / 5040 + d2 * (1.0 / 362880)))));
}

/* What the results of one row read: its bus admittance matrix (CSR over lightsim2grid's full
 * bus order), which buses are in the power flow, each element's bus (-1: off), the branches'
 * admittances, and how a bus' reactive need is shared among its generators. */
typedef struct {
    int64_t n_bus, nb, nl, ng, ns, slack_bus, slack_gen;
    const int64_t *indptr, *indices;
    const cplx *data;
    const int64_t *bus_active, *or_bus, *ex_bus, *load_bus, *gen_bus, *storage_bus;
    double sn;
    const double *vn, *q_share, *q_fixed;
    const cplx *y11, *y12, *y21, *y22;
} FlowGrid;

/* |z| without hypot's guard against overflow (a voltage or a flow is far from overflowing):
 * the kernel takes thousands of magnitudes per row, and hypot costs several times more. */
static inline double magnitude(cplx z) {
    double re = creal(z), im = cimag(z);
    return sqrt(re * re + im * im);
}

/* current = Y v (Ybus as CSR), one row. */
static void ybus_times(const FlowGrid *p, const cplx *v, cplx *current) {
    for (int64_t i = 0; i < p->n_bus; ++i) {
        cplx acc = 0;
        for (int64_t k = p->indptr[i]; k < p->indptr[i + 1]; ++k) acc += p->data[k] * v[p->indices[k]];
        current[i] = acc;
    }
}

/* One solved row's results into o, in FLOW_FIELDS order and grid_vec's units. */
static void row_flows(const FlowGrid *p, const double *inj, const double *storage_p, const cplx *S,
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

#endif
