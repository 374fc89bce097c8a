// SPDX-License-Identifier: MIT
/*
 * Unit tests of cryptobench.[ch]: a tiny measurement gives positive finite
 * numbers in every cell, the feature probe agrees with crypto.h, and the
 * auto explanation names the cipher session_pick_cipher picks.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cryptobench.h"
#include "session.h"

static void test_run_tiny(void **state)
{
	struct cryptobench_result res;
	struct lr_err err = { 0 };
	bool seen_aes = false, seen_chacha = false;
	unsigned i;

	(void)state;
	assert_int_equal(cryptobench_run(5, &res, &err), 0);
	assert_int_equal(res.nrows, CRYPTOBENCH_ROWS);
	assert_int_equal(res.ms_per_cell, 5);
	for (i = 0; i < res.nrows; i++) {
		const struct cryptobench_row *r = &res.rows[i];
		const struct cryptobench_cell *cells[] = { &r->seal, &r->open };
		size_t k;

		seen_aes |= r->cipher == CRYPTO_AES256GCM;
		seen_chacha |= r->cipher == CRYPTO_CHACHA20POLY1305;
		assert_true(r->record == CRYPTOBENCH_BIG_RECORD ||
			    r->record == CRYPTOBENCH_SMALL_RECORD);
		for (k = 0; k < 2; k++) {
			assert_true(cells[k]->bytes >= r->record);
			assert_int_equal(cells[k]->bytes % r->record, 0);
			assert_true(isfinite(cells[k]->seconds));
			assert_true(cells[k]->seconds > 0);
			assert_true(isfinite(cells[k]->mbps));
			assert_true(cells[k]->mbps > 0);
			assert_true(cryptobench_cores_for(
					    cells[k]->mbps,
					    CRYPTOBENCH_GBE_MBPS) > 0);
		}
	}
	assert_true(seen_aes && seen_chacha);
}

static void test_cores_for(void **state)
{
	(void)state;
	assert_true(fabs(cryptobench_cores_for(235.4, 117.7) - 0.5) < 1e-9);
	assert_true(cryptobench_cores_for(0, 117.7) == 0.0);
}

static void test_probe_agrees(void **state)
{
	struct cryptobench_cpu cpu;

	(void)state;
	cryptobench_cpu_probe(&cpu);
	assert_int_equal(cpu.aes, crypto_cpu_has_aes());
	assert_true(cpu.nfeatures >= 1);
	assert_string_equal(cpu.features[0].name, "aes");
	assert_int_equal(cpu.features[0].present, cpu.aes);
	assert_non_null(cpu.arch);
	assert_true(strlen(cpu.model) < sizeof(cpu.model));
	assert_true(strlen(cpu.governor) < sizeof(cpu.governor));
}

static void test_auto_explain(void **state)
{
	static const enum crypto_cipher both[] = { CRYPTO_AES256GCM,
						   CRYPTO_CHACHA20POLY1305 };
	char buf[160];
	int local, peer;
	size_t k;

	(void)state;
	for (local = 0; local < 2; local++) {
		for (peer = 0; peer < 2; peer++) {
			enum crypto_cipher want = session_pick_cipher(
				SESSION_CIPHER_AUTO, peer, local);

			assert_int_equal(cryptobench_auto_pick(local, peer),
					 want);
			cryptobench_auto_explain(local, peer, buf, sizeof(buf));
			for (k = 0; k < 2; k++) {
				bool named =
					strstr(buf, cryptobench_cipher_label(
							    both[k])) != NULL;

				assert_int_equal(named, both[k] == want);
			}
		}
		/* The general reason names what a peer with AES gets. */
		assert_non_null(
			strstr(cryptobench_auto_reason(local),
			       cryptobench_cipher_label(session_pick_cipher(
				       SESSION_CIPHER_AUTO, true, local))));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_tiny),
		cmocka_unit_test(test_cores_for),
		cmocka_unit_test(test_probe_agrees),
		cmocka_unit_test(test_auto_explain),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
