// SPDX-License-Identifier: MIT
/* placeholder: replaced by the module's tests */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "doctor.h"

static void pick_slowest(void **state)
{
	struct doctor_stage st[DOCTOR_NSTAGES] = { 0 };

	(void)state;
	st[DOCTOR_NET].measured = true;
	st[DOCTOR_NET].bps = 117e6;
	st[DOCTOR_DEST].measured = true;
	st[DOCTOR_DEST].bps = 21e6;
	assert_int_equal(doctor_pick(st), DOCTOR_DEST);
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(pick_slowest) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
