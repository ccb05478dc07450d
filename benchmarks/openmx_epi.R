# Times OpenMx's ML fit of the EPI two-factor 2PL (Bock-Aitkin EM, one thread) for
# benchmarks/bench_questionnaires.py; the fit itself is fit_epi of tests/data/ml/questionnaires_reference.R.
# Run from the repository root: Rscript benchmarks/openmx_epi.R [QPOINTS]
suppressMessages({library(OpenMx); library(rpf); library(psychTools)})
args <- commandArgs(trailingOnly = TRUE)
qpoints <- if (length(args) > 0) as.integer(args[1]) else 21L
source_lines <- readLines("tests/data/ml/questionnaires_reference.R")
start <- grep("^fit_epi <- function", source_lines)
end <- start + which(source_lines[start:length(source_lines)] == "}")[1] - 1
mxOption(key = "Number of Threads", value = 1)
data(epi)  # epi.keys, read by fit_epi
eval(parse(text = source_lines[start:end]))
res <- fit_epi(read.csv("tests/data/epi/epi_keyed.csv"), qpoints)
cat(sprintf("openmx %.3f %d %.5f %.2f\n", res$seconds, qpoints, res$fit$epilatent$cov$values[1, 2], -res$fit$output$fit / 2))
