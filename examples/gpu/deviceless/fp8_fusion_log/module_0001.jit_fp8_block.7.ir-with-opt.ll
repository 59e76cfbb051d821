; ModuleID = 'LLVMDialectModule'
source_filename = "LLVMDialectModule"
target datalayout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

@global_smem = external addrspace(3) global [0 x i8], align 16

; Function Attrs: nounwind
declare void @llvm.nvvm.griddepcontrol.wait() #0

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 2147483647) i32 @llvm.nvvm.read.ptx.sreg.ctaid.x() #1

; Function Attrs: mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none)
declare noundef range(i32 0, 1024) i32 @llvm.nvvm.read.ptx.sreg.tid.x() #1

; Function Attrs: convergent nocallback nounwind
declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32) #2

; Function Attrs: convergent nocallback nounwind memory(argmem: write)
declare void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) writeonly captures(none), i32, i32, i32, i32) #3

; Function Attrs: convergent nocallback nofree nounwind memory(argmem: read)
declare { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3(ptr addrspace(3) readonly captures(none)) #4

; Function Attrs: convergent nocallback nounwind memory(argmem: write)
declare void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) writeonly captures(none), i32) #3

; Function Attrs: convergent nocallback nofree nounwind memory(argmem: read)
declare { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) readonly captures(none)) #4

; Function Attrs: convergent nocallback nofree nounwind memory(argmem: read)
declare { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) readonly captures(none)) #4

; Function Attrs: nounwind
define ptx_kernel void @gemm_fusion_dot(ptr noalias align 256 dereferenceable(262144) %arg0, ptr noalias align 256 dereferenceable(393216) %arg1, ptr noalias align 256 dereferenceable(1572864) %arg2) local_unnamed_addr #5 {
  %1 = addrspacecast ptr %arg0 to ptr addrspace(1)
  %2 = addrspacecast ptr %arg1 to ptr addrspace(1)
  %3 = addrspacecast ptr %arg2 to ptr addrspace(1)
  tail call void @llvm.nvvm.griddepcontrol.wait()
  %4 = tail call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %5 = and i32 %4, 15
  %6 = zext nneg i32 %5 to i64
  %7 = udiv i32 %4, 768
  %.zext = zext nneg i32 %7 to i64
  %8 = tail call range(i32 0, 64) i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %9 = lshr i32 %8, 2
  %10 = and i32 %8, 3
  %11 = shl nuw nsw i32 %10, 2
  %12 = zext nneg i32 %9 to i64
  %13 = zext nneg i32 %11 to i64
  %.lhs.trunc10 = lshr i32 %4, 4
  %14 = urem i32 %.lhs.trunc10, 48
  %15 = shl nuw nsw i32 %14, 3
  %16 = zext nneg i32 %15 to i64
  %17 = mul nuw nsw i64 %12, 384
  %18 = shl nuw nsw i32 %10, 1
  %19 = zext nneg i32 %18 to i64
  %20 = or disjoint i64 %17, %19
  %.idx3 = shl nuw nsw i64 %.zext, 8
  %invariant.gep = getelementptr i8, ptr addrspace(1) %1, i64 %.idx3
  %.idx4 = shl nuw nsw i64 %6, 14
  %invariant.gep12 = getelementptr i8, ptr addrspace(1) %invariant.gep, i64 %.idx4
  %.idx5 = shl nuw nsw i64 %12, 10
  %invariant.gep14 = getelementptr i8, ptr addrspace(1) %invariant.gep12, i64 %.idx5
  %invariant.gep15 = getelementptr [2 x i8], ptr addrspace(1) %invariant.gep14, i64 %13
  %21 = shl nuw nsw i32 %8, 3
  %22 = and i32 %21, 376
  %23 = and i32 %8, 16
  %24 = icmp eq i32 %23, 0
  %25 = select i1 %24, i32 0, i32 144
  %26 = xor i32 %25, %22
  %27 = zext nneg i32 %26 to i64
  %28 = getelementptr inbounds nuw i8, ptr addrspace(3) @global_smem, i64 %27
  %29 = getelementptr [2 x i8], ptr addrspace(1) %2, i64 %16
  %.idx8 = mul nuw nsw i64 %.zext, 98304
  %invariant.gep17 = getelementptr i8, ptr addrspace(1) %29, i64 %.idx8
  %invariant.gep18 = getelementptr [2 x i8], ptr addrspace(1) %invariant.gep17, i64 %20
  %30 = shl nuw nsw i32 %8, 2
  %31 = and i32 %30, 128
  %.masked9 = shl nuw nsw i32 %8, 4
  %32 = and i32 %.masked9, 240
  %33 = or i32 %31, %32
  %34 = zext nneg i32 %33 to i64
  %35 = getelementptr i8, ptr addrspace(3) @global_smem, i64 %34
  %36 = getelementptr i8, ptr addrspace(3) %35, i64 512
  %37 = shl nuw nsw i32 %8, 5
  %38 = and i32 %37, 352
  %39 = and i32 %8, 4
  %40 = icmp eq i32 %39, 0
  %41 = select i1 %40, i32 0, i32 144
  %42 = xor i32 %41, %23
  %43 = or disjoint i32 %42, %38
  %44 = zext nneg i32 %43 to i64
  %45 = getelementptr inbounds nuw i8, ptr addrspace(3) @global_smem, i64 %44
  %46 = zext nneg i32 %32 to i64
  %47 = getelementptr i8, ptr addrspace(3) @global_smem, i64 %46
  %48 = getelementptr i8, ptr addrspace(3) %47, i64 512
  %49 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %invariant.gep15) #0
  %50 = extractvalue { i32, i32 } %49, 0
  %51 = extractvalue { i32, i32 } %49, 1
  %extelt.offset6 = lshr i32 %51, 16
  %52 = trunc nuw i32 %extelt.offset6 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %53 = trunc i32 %51 to i16
  %54 = insertelement <2 x i32> poison, i32 %50, i64 0
  %55 = bitcast <2 x i32> %54 to <4 x i16>
  %56 = insertelement <4 x i16> %55, i16 %53, i64 2
  %57 = insertelement <4 x i16> %56, i16 %52, i64 3
  store <4 x i16> %57, ptr addrspace(3) %28, align 8
  %58 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %invariant.gep18) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %58)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %59 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %60 = extractvalue { i32, i32, i32, i32 } %59, 0
  %61 = extractvalue { i32, i32, i32, i32 } %59, 1
  %62 = extractvalue { i32, i32, i32, i32 } %59, 2
  %63 = extractvalue { i32, i32, i32, i32 } %59, 3
  %64 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %65 = extractvalue { i32, i32 } %64, 0
  %66 = extractvalue { i32, i32 } %64, 1
  %67 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float 0.000000e+00, float 0.000000e+00, float 0.000000e+00, float 0.000000e+00, i32 %60, i32 %61, i32 %62, i32 %63, i32 %65, i32 %66) #0
  %68 = extractvalue { float, float, float, float } %67, 0
  %69 = extractvalue { float, float, float, float } %67, 1
  %70 = extractvalue { float, float, float, float } %67, 2
  %71 = extractvalue { float, float, float, float } %67, 3
  %gep16.1 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 32
  %72 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.1) #0
  %73 = extractvalue { i32, i32 } %72, 0
  %74 = extractvalue { i32, i32 } %72, 1
  %extelt.offset6.1 = lshr i32 %74, 16
  %75 = trunc nuw i32 %extelt.offset6.1 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %76 = trunc i32 %74 to i16
  %77 = insertelement <2 x i32> poison, i32 %73, i64 0
  %78 = bitcast <2 x i32> %77 to <4 x i16>
  %79 = insertelement <4 x i16> %78, i16 %76, i64 2
  %80 = insertelement <4 x i16> %79, i16 %75, i64 3
  store <4 x i16> %80, ptr addrspace(3) %28, align 8
  %gep19.1 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 12288
  %81 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.1) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %81)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %82 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %83 = extractvalue { i32, i32, i32, i32 } %82, 0
  %84 = extractvalue { i32, i32, i32, i32 } %82, 1
  %85 = extractvalue { i32, i32, i32, i32 } %82, 2
  %86 = extractvalue { i32, i32, i32, i32 } %82, 3
  %87 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %88 = extractvalue { i32, i32 } %87, 0
  %89 = extractvalue { i32, i32 } %87, 1
  %90 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %68, float %69, float %70, float %71, i32 %83, i32 %84, i32 %85, i32 %86, i32 %88, i32 %89) #0
  %91 = extractvalue { float, float, float, float } %90, 0
  %92 = extractvalue { float, float, float, float } %90, 1
  %93 = extractvalue { float, float, float, float } %90, 2
  %94 = extractvalue { float, float, float, float } %90, 3
  %gep16.2 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 64
  %95 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.2) #0
  %96 = extractvalue { i32, i32 } %95, 0
  %97 = extractvalue { i32, i32 } %95, 1
  %extelt.offset6.2 = lshr i32 %97, 16
  %98 = trunc nuw i32 %extelt.offset6.2 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %99 = trunc i32 %97 to i16
  %100 = insertelement <2 x i32> poison, i32 %96, i64 0
  %101 = bitcast <2 x i32> %100 to <4 x i16>
  %102 = insertelement <4 x i16> %101, i16 %99, i64 2
  %103 = insertelement <4 x i16> %102, i16 %98, i64 3
  store <4 x i16> %103, ptr addrspace(3) %28, align 8
  %gep19.2 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 24576
  %104 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.2) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %104)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %105 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %106 = extractvalue { i32, i32, i32, i32 } %105, 0
  %107 = extractvalue { i32, i32, i32, i32 } %105, 1
  %108 = extractvalue { i32, i32, i32, i32 } %105, 2
  %109 = extractvalue { i32, i32, i32, i32 } %105, 3
  %110 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %111 = extractvalue { i32, i32 } %110, 0
  %112 = extractvalue { i32, i32 } %110, 1
  %113 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %91, float %92, float %93, float %94, i32 %106, i32 %107, i32 %108, i32 %109, i32 %111, i32 %112) #0
  %114 = extractvalue { float, float, float, float } %113, 0
  %115 = extractvalue { float, float, float, float } %113, 1
  %116 = extractvalue { float, float, float, float } %113, 2
  %117 = extractvalue { float, float, float, float } %113, 3
  %gep16.3 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 96
  %118 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.3) #0
  %119 = extractvalue { i32, i32 } %118, 0
  %120 = extractvalue { i32, i32 } %118, 1
  %extelt.offset6.3 = lshr i32 %120, 16
  %121 = trunc nuw i32 %extelt.offset6.3 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %122 = trunc i32 %120 to i16
  %123 = insertelement <2 x i32> poison, i32 %119, i64 0
  %124 = bitcast <2 x i32> %123 to <4 x i16>
  %125 = insertelement <4 x i16> %124, i16 %122, i64 2
  %126 = insertelement <4 x i16> %125, i16 %121, i64 3
  store <4 x i16> %126, ptr addrspace(3) %28, align 8
  %gep19.3 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 36864
  %127 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.3) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %127)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %128 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %129 = extractvalue { i32, i32, i32, i32 } %128, 0
  %130 = extractvalue { i32, i32, i32, i32 } %128, 1
  %131 = extractvalue { i32, i32, i32, i32 } %128, 2
  %132 = extractvalue { i32, i32, i32, i32 } %128, 3
  %133 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %134 = extractvalue { i32, i32 } %133, 0
  %135 = extractvalue { i32, i32 } %133, 1
  %136 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %114, float %115, float %116, float %117, i32 %129, i32 %130, i32 %131, i32 %132, i32 %134, i32 %135) #0
  %137 = extractvalue { float, float, float, float } %136, 0
  %138 = extractvalue { float, float, float, float } %136, 1
  %139 = extractvalue { float, float, float, float } %136, 2
  %140 = extractvalue { float, float, float, float } %136, 3
  %gep16.4 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 128
  %141 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.4) #0
  %142 = extractvalue { i32, i32 } %141, 0
  %143 = extractvalue { i32, i32 } %141, 1
  %extelt.offset6.4 = lshr i32 %143, 16
  %144 = trunc nuw i32 %extelt.offset6.4 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %145 = trunc i32 %143 to i16
  %146 = insertelement <2 x i32> poison, i32 %142, i64 0
  %147 = bitcast <2 x i32> %146 to <4 x i16>
  %148 = insertelement <4 x i16> %147, i16 %145, i64 2
  %149 = insertelement <4 x i16> %148, i16 %144, i64 3
  store <4 x i16> %149, ptr addrspace(3) %28, align 8
  %gep19.4 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 49152
  %150 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.4) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %150)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %151 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %152 = extractvalue { i32, i32, i32, i32 } %151, 0
  %153 = extractvalue { i32, i32, i32, i32 } %151, 1
  %154 = extractvalue { i32, i32, i32, i32 } %151, 2
  %155 = extractvalue { i32, i32, i32, i32 } %151, 3
  %156 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %157 = extractvalue { i32, i32 } %156, 0
  %158 = extractvalue { i32, i32 } %156, 1
  %159 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %137, float %138, float %139, float %140, i32 %152, i32 %153, i32 %154, i32 %155, i32 %157, i32 %158) #0
  %160 = extractvalue { float, float, float, float } %159, 0
  %161 = extractvalue { float, float, float, float } %159, 1
  %162 = extractvalue { float, float, float, float } %159, 2
  %163 = extractvalue { float, float, float, float } %159, 3
  %gep16.5 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 160
  %164 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.5) #0
  %165 = extractvalue { i32, i32 } %164, 0
  %166 = extractvalue { i32, i32 } %164, 1
  %extelt.offset6.5 = lshr i32 %166, 16
  %167 = trunc nuw i32 %extelt.offset6.5 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %168 = trunc i32 %166 to i16
  %169 = insertelement <2 x i32> poison, i32 %165, i64 0
  %170 = bitcast <2 x i32> %169 to <4 x i16>
  %171 = insertelement <4 x i16> %170, i16 %168, i64 2
  %172 = insertelement <4 x i16> %171, i16 %167, i64 3
  store <4 x i16> %172, ptr addrspace(3) %28, align 8
  %gep19.5 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 61440
  %173 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.5) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %173)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %174 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %175 = extractvalue { i32, i32, i32, i32 } %174, 0
  %176 = extractvalue { i32, i32, i32, i32 } %174, 1
  %177 = extractvalue { i32, i32, i32, i32 } %174, 2
  %178 = extractvalue { i32, i32, i32, i32 } %174, 3
  %179 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %180 = extractvalue { i32, i32 } %179, 0
  %181 = extractvalue { i32, i32 } %179, 1
  %182 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %160, float %161, float %162, float %163, i32 %175, i32 %176, i32 %177, i32 %178, i32 %180, i32 %181) #0
  %183 = extractvalue { float, float, float, float } %182, 0
  %184 = extractvalue { float, float, float, float } %182, 1
  %185 = extractvalue { float, float, float, float } %182, 2
  %186 = extractvalue { float, float, float, float } %182, 3
  %gep16.6 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 192
  %187 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.6) #0
  %188 = extractvalue { i32, i32 } %187, 0
  %189 = extractvalue { i32, i32 } %187, 1
  %extelt.offset6.6 = lshr i32 %189, 16
  %190 = trunc nuw i32 %extelt.offset6.6 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %191 = trunc i32 %189 to i16
  %192 = insertelement <2 x i32> poison, i32 %188, i64 0
  %193 = bitcast <2 x i32> %192 to <4 x i16>
  %194 = insertelement <4 x i16> %193, i16 %191, i64 2
  %195 = insertelement <4 x i16> %194, i16 %190, i64 3
  store <4 x i16> %195, ptr addrspace(3) %28, align 8
  %gep19.6 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 73728
  %196 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.6) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %196)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %197 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %198 = extractvalue { i32, i32, i32, i32 } %197, 0
  %199 = extractvalue { i32, i32, i32, i32 } %197, 1
  %200 = extractvalue { i32, i32, i32, i32 } %197, 2
  %201 = extractvalue { i32, i32, i32, i32 } %197, 3
  %202 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %203 = extractvalue { i32, i32 } %202, 0
  %204 = extractvalue { i32, i32 } %202, 1
  %205 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %183, float %184, float %185, float %186, i32 %198, i32 %199, i32 %200, i32 %201, i32 %203, i32 %204) #0
  %206 = extractvalue { float, float, float, float } %205, 0
  %207 = extractvalue { float, float, float, float } %205, 1
  %208 = extractvalue { float, float, float, float } %205, 2
  %209 = extractvalue { float, float, float, float } %205, 3
  %gep16.7 = getelementptr i8, ptr addrspace(1) %invariant.gep15, i64 224
  %210 = tail call { i32, i32 } asm sideeffect "mov.u32 $0, 0x0; mov.u32 $1, 0x0; ld.global.v2.b32 { $0, $1 }, [ $2 + 0 ];", "=r,=r,l"(ptr addrspace(1) %gep16.7) #0
  %211 = extractvalue { i32, i32 } %210, 0
  %212 = extractvalue { i32, i32 } %210, 1
  %extelt.offset6.7 = lshr i32 %212, 16
  %213 = trunc nuw i32 %extelt.offset6.7 to i16
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %214 = trunc i32 %212 to i16
  %215 = insertelement <2 x i32> poison, i32 %211, i64 0
  %216 = bitcast <2 x i32> %215 to <4 x i16>
  %217 = insertelement <4 x i16> %216, i16 %214, i64 2
  %218 = insertelement <4 x i16> %217, i16 %213, i64 3
  store <4 x i16> %218, ptr addrspace(3) %28, align 8
  %gep19.7 = getelementptr i8, ptr addrspace(1) %invariant.gep18, i64 86016
  %219 = tail call i32 asm sideeffect "mov.u32 $0, 0x0; ld.global.b32 { $0 }, [ $1 + 0 ];", "=r,l"(ptr addrspace(1) %gep19.7) #0
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x1.b16.p3(ptr addrspace(3) %36, i32 %219)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %220 = tail call { i32, i32, i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %45)
  %221 = extractvalue { i32, i32, i32, i32 } %220, 0
  %222 = extractvalue { i32, i32, i32, i32 } %220, 1
  %223 = extractvalue { i32, i32, i32, i32 } %220, 2
  %224 = extractvalue { i32, i32, i32, i32 } %220, 3
  %225 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.trans.b16.p3(ptr addrspace(3) %48)
  %226 = extractvalue { i32, i32 } %225, 0
  %227 = extractvalue { i32, i32 } %225, 1
  %228 = tail call { float, float, float, float } asm sideeffect "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 { $0, $1, $2, $3 }, { $8, $9, $10, $11 }, { $12, $13 }, { $4, $5, $6, $7 };", "=f,=f,=f,=f,0,1,2,3,r,r,r,r,r,r"(float %206, float %207, float %208, float %209, i32 %221, i32 %222, i32 %223, i32 %224, i32 %226, i32 %227) #0
  %229 = extractvalue { float, float, float, float } %228, 0
  %230 = extractvalue { float, float, float, float } %228, 1
  %231 = extractvalue { float, float, float, float } %228, 2
  %232 = extractvalue { float, float, float, float } %228, 3
  %233 = getelementptr [4 x i8], ptr addrspace(1) %3, i64 %16
  %.idx = mul nuw nsw i64 %6, 24576
  %234 = getelementptr i8, ptr addrspace(1) %233, i64 %.idx
  %.idx1 = mul nuw nsw i64 %.zext, 393216
  %235 = getelementptr i8, ptr addrspace(1) %234, i64 %.idx1
  %236 = getelementptr [4 x i8], ptr addrspace(1) %235, i64 %20
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %237 = and i32 %.masked9, 112
  %238 = and i32 %37, 256
  %239 = and i32 %21, 128
  %240 = or disjoint i32 %237, %238
  %241 = or disjoint i32 %240, %239
  %242 = zext nneg i32 %241 to i64
  %243 = getelementptr inbounds nuw i8, ptr addrspace(3) @global_smem, i64 %242
  %244 = bitcast float %229 to i32
  %245 = bitcast float %230 to i32
  %246 = bitcast float %231 to i32
  %247 = bitcast float %232 to i32
  tail call void @llvm.nvvm.stmatrix.sync.aligned.m8n8.x4.b16.p3(ptr addrspace(3) %243, i32 %244, i32 %245, i32 %246, i32 %247)
  tail call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)
  %248 = or i32 %239, %31
  %249 = or disjoint i32 %248, %240
  %250 = zext nneg i32 %249 to i64
  %251 = getelementptr inbounds nuw i8, ptr addrspace(3) @global_smem, i64 %250
  %252 = tail call { i32, i32 } @llvm.nvvm.ldmatrix.sync.aligned.m8n8.x2.b16.p3(ptr addrspace(3) %251)
  %253 = extractvalue { i32, i32 } %252, 0
  %254 = extractvalue { i32, i32 } %252, 1
  tail call void asm sideeffect "st.global.v2.b32 [ $2 + 0 ], { $0, $1 };", "r,r,l"(i32 %253, i32 %254, ptr addrspace(1) %236) #0
  ret void
}

attributes #0 = { nounwind }
attributes #1 = { mustprogress nocallback nofree nosync nounwind speculatable willreturn memory(none) }
attributes #2 = { convergent nocallback nounwind }
attributes #3 = { convergent nocallback nounwind memory(argmem: write) }
attributes #4 = { convergent nocallback nofree nounwind memory(argmem: read) }
attributes #5 = { nounwind "nvvm.reqntid"="64,1,1" }

!llvm.module.flags = !{!0, !1}
!nvvm.annotations = !{}

!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = !{i32 4, !"nvvm-reflect-ftz", i32 0}
