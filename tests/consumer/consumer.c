/* A program outside the project, built against the installed package. */
#include <forgia/forgia.h>  /* every module must compile as plain C */
#include <stdio.h>
#include <string.h>

int main(void) {
  fg_device *d;
  if (fg_device_open("cpu", &d) != FG_OK) return 1;
  /* CPU device memory is host memory, so the results are read in place. */
  float x[3] = {1.0f, -2.0f, 3.0f};
  double sum, sumsq;
  if (fg_reduce_array(d, FG_REDUCE_SUM, x, FG_F32, 3, &sum, NULL) != FG_OK ||
      fg_reduce_array(d, FG_REDUCE_SUMSQ, x, FG_F32, 3, &sumsq, NULL) != FG_OK || sum != 2.0 || sumsq != 14.0)
    return 2;
  fg_device_close(d);
  if (fg_device_open("bogus", &d) != FG_ERR_INVALID_ARG || strstr(fg_last_error(), "bogus") == NULL) return 3;
  /* the installed headers and the library linked are the same version */
  if (fg_version_number() != FORGIA_VERSION_NUMBER || strcmp(fg_version(), FORGIA_VERSION_STRING) != 0) {
    printf("headers say %s (%d), libforgia says %s (%d)\n", FORGIA_VERSION_STRING, FORGIA_VERSION_NUMBER, fg_version(),
           fg_version_number());
    return 4;
  }
  printf("consumer ok: forgia %s, %s\n", fg_version(), fg_status_name(FG_ERR_TRUNCATED));
  return 0;
}
