/* dtsim command-line entry point. */
#include <stdio.h>
int main(void)
{
  puts("dtsim: under construction");
  return 0;
}
