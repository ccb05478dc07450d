# Reference values of the inter-rater agreement coefficients (issue 39), from Debian's R packages
# (bookworm: r-cran-psych, r-cran-vcd, r-cran-lme4). Run from the repository root:
#   Rscript tests/data/agreement/agreement_reference.R
# Writes the CSV files beside this script; tests/agreement/test_references.py reads them.
suppressPackageStartupMessages({library(psych); library(vcd); library(lme4)})
out <- "tests/data/agreement"
options(digits = 15)

# Shrout & Fleiss (1979), Table 2: 6 targets x 4 judges (also psych::ICC's own example).
sf <- matrix(c(9, 6, 8, 7, 10, 6, 2, 1, 4, 1, 5, 2, 5, 3, 6, 2, 6, 4, 8, 2, 8, 6, 9, 7), ncol = 4)
write.csv(data.frame(response = rep(1:6, 4), rater = rep(paste0("J", 1:4), each = 6), score = as.vector(sf)),
          file.path(out, "shrout_fleiss.csv"), row.names = FALSE)

icc_rows <- function(x) {
  r <- psych::ICC(x, alpha = 0.05, lmer = FALSE)$results
  data.frame(coefficient = c("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k"), estimate = r$ICC, f = r$F,
             df1 = r$df1, df2 = r$df2, p_value = r$p, lower = r[["lower bound"]], upper = r[["upper bound"]])
}
write.csv(icc_rows(sf), file.path(out, "shrout_fleiss_icc_psych.csv"), row.names = FALSE)

# RSMTool's PRMSE test data (tests/data/rsmtool_prmse): 10,000 responses x 4 ratings, complete.
# psych::ICC fits aov() with a dense design of one column per response (40,000 x 10,003 took over
# 6 GB and minutes), so its reference uses the first 1,000 responses.
rsm <- read.csv("tests/data/rsmtool_prmse/prmse_data.csv")
write.csv(icc_rows(as.matrix(rsm[1:1000, c("h1", "h2", "h3", "h4")])), file.path(out, "rsmtool_icc_psych.csv"), row.names = FALSE)

kappa_rows <- function(tab, name) {
  rows <- list()
  for (w in c("none", "Equal-Spacing", "Fleiss-Cohen")) {
    k <- if (w == "none") vcd::Kappa(tab)$Unweighted else vcd::Kappa(tab, weights = w)$Weighted
    ci <- k["value"] + c(-1, 1) * qnorm(0.975) * k["ASE"]
    rows[[w]] <- data.frame(data = name, weights = c(none = "none", `Equal-Spacing` = "linear", `Fleiss-Cohen` = "quadratic")[[w]],
                            estimate = k[["value"]], se = k[["ASE"]], lower = ci[1], upper = ci[2])
  }
  do.call(rbind, rows)
}
# vcd's SexualFun: husbands' and wives' answers, 91 couples, 4 ordered categories.
data(SexualFun, package = "vcd")
sexual <- as.data.frame(SexualFun)
write.csv(data.frame(husband = as.integer(sexual$Husband), wife = as.integer(sexual$Wife), n = sexual$Freq),
          file.path(out, "sexual_fun.csv"), row.names = FALSE)
both <- rbind(kappa_rows(SexualFun, "sexual_fun"),
              kappa_rows(table(factor(rsm$h1, levels = 0:4), factor(rsm$h2, levels = 0:4)), "rsmtool_h1_h2"))
write.csv(both, file.path(out, "kappa_vcd.csv"), row.names = FALSE)

# Unbalanced crossed design: the InstEval subset (tests/data/insteval), REML variance components.
ie <- read.csv("tests/data/insteval/insteval_ratings.csv")
fit <- lme4::lmer(score ~ 1 + (1 | response) + (1 | rater), data = ie, REML = TRUE)
vc <- as.data.frame(lme4::VarCorr(fit))
write.csv(data.frame(component = c("unit", "rater", "error"),
                     variance = c(vc$vcov[vc$grp == "response"], vc$vcov[vc$grp == "rater"], vc$vcov[vc$grp == "Residual"])),
          file.path(out, "insteval_lmer_variances.csv"), row.names = FALSE)
