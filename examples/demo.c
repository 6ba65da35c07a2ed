/* demo.c: the example program the README records. It sieves primes, sorts
 * them with qsort and hashes the result, each in its own function, so that a
 * trace of it shows a few clearly named phases nested under main. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LIMIT 4000000

__attribute__((noinline)) static size_t sieve(uint8_t *composite, uint32_t *primes)
{
	size_t count = 0;

	memset(composite, 0, LIMIT);
	for (uint32_t i = 2; i < LIMIT; i++) {
		if (composite[i])
			continue;
		primes[count++] = i;
		for (uint64_t j = (uint64_t)i * i; j < LIMIT; j += i)
			composite[j] = 1;
	}
	return count;
}

static int descending(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? 1 : x > y ? -1 : 0;
}

__attribute__((noinline)) static void sort_primes(uint32_t *primes, size_t count)
{
	qsort(primes, count, sizeof(*primes), descending);
}

__attribute__((noinline)) static uint64_t hash_primes(const uint32_t *primes, size_t count)
{
	uint64_t h = 1469598103934665603ull;

	for (int round = 0; round < 20; round++)
		for (size_t i = 0; i < count; i++)
			h = (h ^ primes[i]) * 1099511628211ull;
	return h;
}

__attribute__((noinline)) static uint64_t one_round(uint8_t *composite, uint32_t *primes)
{
	size_t count = sieve(composite, primes);

	sort_primes(primes, count);
	return hash_primes(primes, count);
}

int main(void)
{
	uint8_t *composite = malloc(LIMIT);
	uint32_t *primes = malloc(LIMIT / 2 * sizeof(*primes));
	uint64_t h = 0;

	if (!composite || !primes)
		return 1;
	for (int round = 0; round < 16; round++)
		h = h * 31 + one_round(composite, primes);
	printf("demo: 16 rounds of sieve, sort and hash done (hash %016llx)\n",
	       (unsigned long long)h);
	free(composite);
	free(primes);
	return 0;
}
