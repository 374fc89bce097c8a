/* SPDX-License-Identifier: MIT */
/*
 * The machine description that the soft-fp routines of glibc's source
 * (soft-fp/, built by scripts/static.sh for a soft-float MIPS32 target)
 * ask for: 32-bit words, MIPS's legacy NaN (a quiet NaN has the top
 * fraction bit clear), no FPU state (no exceptions raised, round to
 * nearest). They replace libgcc's __adddf3 and the others, which Debian's
 * mipsel toolchain builds for hard float.
 */
#ifndef LINERATE_SFP_MACHINE_H
#define LINERATE_SFP_MACHINE_H

#define _FP_W_TYPE_SIZE 32
#define _FP_W_TYPE	unsigned int
#define _FP_WS_TYPE	signed int
#define _FP_I_TYPE	int

#define _FP_MUL_MEAT_S(R, X, Y) \
	_FP_MUL_MEAT_1_wide(_FP_WFRACBITS_S, R, X, Y, umul_ppmm)
#define _FP_MUL_MEAT_D(R, X, Y) \
	_FP_MUL_MEAT_2_wide(_FP_WFRACBITS_D, R, X, Y, umul_ppmm)
#define _FP_MUL_MEAT_Q(R, X, Y) \
	_FP_MUL_MEAT_4_wide(_FP_WFRACBITS_Q, R, X, Y, umul_ppmm)
#define _FP_DIV_MEAT_S(R, X, Y) _FP_DIV_MEAT_1_udiv_norm(S, R, X, Y)
#define _FP_DIV_MEAT_D(R, X, Y) _FP_DIV_MEAT_2_udiv(D, R, X, Y)
#define _FP_DIV_MEAT_Q(R, X, Y) _FP_DIV_MEAT_4_udiv(Q, R, X, Y)

#define _FP_NANFRAC_S	 (_FP_QNANBIT_S - 1)
#define _FP_NANFRAC_D	 (_FP_QNANBIT_D - 1), -1
#define _FP_NANFRAC_Q	 (_FP_QNANBIT_Q - 1), -1, -1, -1
#define _FP_NANSIGN_S	 0
#define _FP_NANSIGN_D	 0
#define _FP_NANSIGN_Q	 0
#define _FP_KEEPNANFRACP 1
#define _FP_QNANNEGATEDP 1

/* an operation on NaNs gives the default NaN */
#define _FP_CHOOSENAN(fs, wc, R, X, Y, OP)              \
	do {                                            \
		R##_s = _FP_NANSIGN_##fs;               \
		_FP_FRAC_SET_##wc(R, _FP_NANFRAC_##fs); \
		R##_c = FP_CLS_NAN;                     \
	} while (0)

#define _FP_TININESS_AFTER_ROUNDING 0

#define __LITTLE_ENDIAN 1234
#define __BIG_ENDIAN	4321
#ifdef __MIPSEB__
#define __BYTE_ORDER __BIG_ENDIAN
#else
#define __BYTE_ORDER __LITTLE_ENDIAN
#endif

/* glibc's own macro, which the comparison files use for their aliases */
#define strong_alias(name, aliasname) \
	extern __typeof(name) aliasname __attribute__((alias(#name)));

#endif
