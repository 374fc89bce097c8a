// SPDX-License-Identifier: MIT
/* linerate crypto. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "report_int.h"
#include "banned.h"

static void print_features(FILE *out, const struct cryptobench_cpu *cpu)
{
	unsigned i;

	fprintf(out, "Features:   ");
	for (i = 0; i < cpu->nfeatures; i++)
		fprintf(out, "%s%s %s", i ? ", " : "", cpu->features[i].name,
			cpu->features[i].present ? "yes" : "no");
	fprintf(out, "\n");
}

void report_crypto_human(FILE *out, const struct cryptobench_cpu *cpu,
			 const struct cryptobench_result *res)
{
	unsigned i;

	fprintf(out, "CPU:        %s (%s)\n",
		cpu->model[0] ? cpu->model : "unknown", cpu->arch);
	print_features(out, cpu);
	fprintf(out, "Governor:   %s\n",
		cpu->governor[0] ? cpu->governor : "unknown (no cpufreq)");
	fprintf(out, "Library:    %s\n", crypto_library_version());
	fprintf(out,
		"One thread, %.2f s per cell, in-place AEAD; "
		"MB/s = 10^6 bytes/s\n\n",
		(double)res->ms_per_cell / 1000.0);
	fprintf(out, "%-18s %8s %11s %11s   %s\n", "Cipher", "Record",
		"Seal MB/s", "Open MB/s", "Cores for 1 GbE (seal/open)");
	for (i = 0; i < res->nrows; i++) {
		const struct cryptobench_row *r = &res->rows[i];

		fprintf(out, "%-18s %4zu KiB %11.1f %11.1f   %.3f / %.3f\n",
			cryptobench_cipher_label(r->cipher), r->record >> 10,
			r->seal.mbps, r->open.mbps,
			cryptobench_cores_for(r->seal.mbps,
					      CRYPTOBENCH_GBE_MBPS),
			cryptobench_cores_for(r->open.mbps,
					      CRYPTOBENCH_GBE_MBPS));
	}
	fprintf(out,
		"\n1 GbE carries %.1f MB/s each way: the sender seals it, the "
		"receiver opens it.\n",
		CRYPTOBENCH_GBE_MBPS);
	fprintf(out, "auto: %s; %s\n", cryptobench_auto_reason(cpu->aes),
		cpu->aes_why);
}

static cJSON *cpu_json(const struct cryptobench_cpu *cpu)
{
	cJSON *o = cJSON_CreateObject(), *feat;
	unsigned i;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "model", cpu->model);
	cJSON_AddStringToObject(o, "arch", cpu->arch);
	if (cpu->governor[0])
		cJSON_AddStringToObject(o, "governor", cpu->governor);
	else
		cJSON_AddNullToObject(o, "governor");
	feat = cJSON_AddObjectToObject(o, "features");
	for (i = 0; feat && i < cpu->nfeatures; i++)
		cJSON_AddBoolToObject(feat, cpu->features[i].name,
				      cpu->features[i].present);
	return o;
}

static cJSON *cell_json(const char *op, const struct cryptobench_row *r,
			const struct cryptobench_cell *c)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddStringToObject(o, "cipher", crypto_cipher_name(r->cipher));
	cJSON_AddStringToObject(o, "op", op);
	cJSON_AddNumberToObject(o, "record_bytes", (double)r->record);
	cJSON_AddNumberToObject(o, "bytes", (double)c->bytes);
	cJSON_AddNumberToObject(o, "seconds", report__json_num(c->seconds));
	cJSON_AddNumberToObject(o, "mbytes_per_second",
				report__json_num(c->mbps));
	cJSON_AddNumberToObject(o, "cores_for_1gbe",
				report__json_num(cryptobench_cores_for(
					c->mbps, CRYPTOBENCH_GBE_MBPS)));
	return o;
}

static cJSON *auto_json(const struct cryptobench_cpu *cpu)
{
	cJSON *o = cJSON_CreateObject();
	bool aes = cpu->aes;

	if (!o)
		return NULL;
	cJSON_AddStringToObject(
		o, "peer_with_aes",
		crypto_cipher_name(cryptobench_auto_pick(aes, true)));
	cJSON_AddStringToObject(
		o, "peer_without_aes",
		crypto_cipher_name(cryptobench_auto_pick(aes, false)));
	cJSON_AddStringToObject(o, "reason", cryptobench_auto_reason(aes));
	cJSON_AddStringToObject(o, "why", cpu->aes_why);
	return o;
}

int report_crypto_json(FILE *out, const struct cryptobench_cpu *cpu,
		       const struct cryptobench_result *res)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	char *text;
	unsigned i;

	if (!root)
		return -ENOMEM;
	cJSON_AddItemToObject(root, "cpu", cpu_json(cpu));
	cJSON_AddStringToObject(root, "library", crypto_library_version());
	cJSON_AddNumberToObject(root, "seconds_per_cell",
				(double)res->ms_per_cell / 1000.0);
	cJSON_AddNumberToObject(root, "link_1gbe_mbytes_per_second",
				CRYPTOBENCH_GBE_MBPS);
	arr = cJSON_AddArrayToObject(root, "results");
	for (i = 0; arr && i < res->nrows; i++) {
		cJSON_AddItemToArray(arr, cell_json("seal", &res->rows[i],
						    &res->rows[i].seal));
		cJSON_AddItemToArray(arr, cell_json("open", &res->rows[i],
						    &res->rows[i].open));
	}
	cJSON_AddItemToObject(root, "auto", auto_json(cpu));
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -ENOMEM;
	fprintf(out, "%s\n", text);
	free(text);
	return 0;
}

void report_crypto_json_error(FILE *out, const char *msg)
{
	cJSON *root = cJSON_CreateObject();
	char *text;

	if (!root)
		return;
	cJSON_AddStringToObject(root, "error", msg);
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (text)
		fprintf(out, "%s\n", text);
	free(text);
}
